#!/usr/bin/env bash
# Run the default model (SmolLM2-135M-Instruct) on this machine: fetch and verify it,
# convert it to .slm once, then answer a prompt with the slm CLI.
#   scripts/run.sh                      # a demo question
#   scripts/run.sh "Your question"      # your own
set -euo pipefail
cd "$(dirname "$0")/.."
export TINYRUSTLM_CACHE="${TINYRUSTLM_CACHE:-$HOME/.cache/tinyrustlm}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$TINYRUSTLM_CACHE/target}"
scripts/fetch-models.sh >&2
cargo build --release --locked --bin slm >&2
SLM="$CARGO_TARGET_DIR/release/slm"
MODEL="$TINYRUSTLM_CACHE/slm/smollm2-135m-instruct-q8_0.slm"
if [ ! -f "$MODEL" ]; then
  mkdir -p "$(dirname "$MODEL")"
  "$SLM" convert "$TINYRUSTLM_CACHE/models/SmolLM2-135M-Instruct.Q4_1.gguf" -o "$MODEL" --quant q8_0 >&2
fi
PROMPT="${1:-Give me three tips for writing clear commit messages.}"
python3 -c 'import json, sys; print(json.dumps([{"role": "user", "content": sys.argv[1]}]))' "$PROMPT" |
  "$SLM" generate "$MODEL" --messages - --max-tokens 256
