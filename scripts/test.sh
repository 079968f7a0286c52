#!/usr/bin/env bash
# The whole test suite, from a fresh machine: toolchain pieces, real models, native
# tests (parity with the committed transformers goldens), CLI tests, a wasm32 build
# of the runtime, and the browser tests (scripts/e2e.sh: the built app in Chromium). Every install step is idempotent; the cargo target dir lives under
# ~/.cache so a second run is incremental.
set -euo pipefail
cd "$(dirname "$0")/.."
export TINYRUSTLM_CACHE="${TINYRUSTLM_CACHE:-$HOME/.cache/tinyrustlm}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$TINYRUSTLM_CACHE/target}"

rustup target list --installed | grep -qx wasm32-unknown-unknown || rustup target add wasm32-unknown-unknown

# A fast first step that needs no model: formatting, lints (warnings are errors), and
# the unit tests. A failure here stops the run in minutes instead of after the models.
echo "== fmt, clippy -D warnings, unit tests (no models)"
cargo fmt --all --check
cargo clippy --release --locked -p slm-runtime -p slm-cli --all-targets -- -D warnings
cargo clippy --release --locked -p tinyrustlm-web --target wasm32-unknown-unknown -- -D warnings
# The simd128 kernels compile only with the feature on (as the page is built).
RUSTFLAGS="-C target-feature=+simd128" CARGO_TARGET_DIR="$CARGO_TARGET_DIR/simd128" \
  cargo clippy --release --locked -p slm-runtime --target wasm32-unknown-unknown -- -D warnings
cargo test --release --locked -p slm-runtime --lib
cargo test --release --locked -p tinyrustlm-web --lib
node scripts/serve-test.mjs
python3 eval/check_sets.py > /dev/null   # the behaviour sets' fields, counts and labels

scripts/fetch-models.sh

cargo fetch --locked
cargo build --release --locked -p slm-runtime -p slm-cli
echo "== wasm32 build of the runtime"
cargo build --release --locked -p slm-runtime --target wasm32-unknown-unknown
echo "== wasm simd128 kernels against the scalar reference (under node)"
CARGO_TARGET_DIR="$TINYRUSTLM_CACHE/target-wasm" scripts/wasm-kernel-test.sh

echo "== fuzz smoke: every target for 20 s (fuzz/run.sh; docs/fuzzing.md)"
rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
cargo +nightly fuzz --version > /dev/null 2>&1 || cargo install cargo-fuzz --locked
fuzz/run.sh 20

echo "== tests"
log="$(mktemp)"
set +e
cargo test --release --locked --no-fail-fast -p slm-runtime -p slm-cli -- --test-threads=1 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
echo "== browser tests"
scripts/e2e.sh 2>&1 | tee -a "$log"
e2e_status=${PIPESTATUS[0]}
[ "$status" = 0 ] && status=$e2e_status
set -e
# cargo's "test result: ok. N passed; M failed" lines and e2e.sh's summary line.
passed=$(grep -Eo '(test result: .*|^)[0-9]+ passed[;,]' "$log" | grep -Eo '[0-9]+ passed' | awk '{s+=$1} END {print s+0}' || true)
failed=$(grep -Eo '(test result: .*|^)[0-9]+ passed[;,] [0-9]+ failed' "$log" | grep -Eo '[0-9]+ failed' | awk '{s+=$1} END {print s+0}' || true)
rm -f "$log"
echo "$passed passed, $failed failed"
exit "$status"
