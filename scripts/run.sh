#!/usr/bin/env bash
# Run the app on this machine: install the web tools (once), fetch and convert the
# catalog's two models to .slm (SmolLM2-135M-Instruct, the small default, and
# Qwen2.5-Coder-0.5B-Instruct), build the app, and serve it with both on
# http://127.0.0.1:8080/ (the catalog points at the local files). Ctrl-C stops it.
#   PORT=9000 scripts/run.sh
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/web-tools.sh
export TINYRUSTLM_CACHE="${TINYRUSTLM_CACHE:-$HOME/.cache/tinyrustlm}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$TINYRUSTLM_CACHE/target}"
SMOL="$(scripts/model.sh smollm2)"
QWEN="$(scripts/model.sh qwen)"
scripts/build-web.sh
exec node scripts/serve.mjs --root dist --port "${PORT:-8080}" --slm "$CARGO_TARGET_DIR/release/slm" \
  --model "$SMOL=smollm2-135m-instruct" --model "$QWEN=qwen2.5-coder-0.5b-instruct"
