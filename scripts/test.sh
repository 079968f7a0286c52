#!/usr/bin/env bash
# The whole test suite, from a fresh machine: toolchain pieces, real models, native
# tests (parity with the committed transformers goldens), CLI tests, and a wasm32 build
# of the runtime. Every install step is idempotent; the cargo target dir lives under
# ~/.cache so a second run is incremental.
set -euo pipefail
cd "$(dirname "$0")/.."
export TINYRUSTLM_CACHE="${TINYRUSTLM_CACHE:-$HOME/.cache/tinyrustlm}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$TINYRUSTLM_CACHE/target}"

rustup target list --installed | grep -qx wasm32-unknown-unknown || rustup target add wasm32-unknown-unknown

scripts/fetch-models.sh

cargo fetch --locked
cargo build --release --locked --workspace
echo "== wasm32 build of the runtime"
cargo build --release --locked -p slm-runtime --target wasm32-unknown-unknown

echo "== tests"
log="$(mktemp)"
set +e
cargo test --release --locked --workspace -- --test-threads=1 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
passed=$(grep -Eo '[0-9]+ passed' "$log" | awk '{s+=$1} END {print s+0}')
failed=$(grep -Eo '[0-9]+ failed' "$log" | awk '{s+=$1} END {print s+0}')
rm -f "$log"
echo "$passed passed, $failed failed"
exit "$status"
