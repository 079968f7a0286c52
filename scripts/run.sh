#!/usr/bin/env bash
# Run the app with the default model on this machine: install the web tools (once),
# fetch and convert SmolLM2-135M-Instruct to .slm, build the app, and serve both on
# http://127.0.0.1:8080/ (the catalog points at the local model). Ctrl-C stops it.
#   PORT=9000 scripts/run.sh
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/web-tools.sh
MODEL="$(scripts/default-model.sh)"
scripts/build-web.sh
exec node scripts/serve.mjs --root dist --port "${PORT:-8080}" --model "$MODEL=smollm2-135m-instruct"
