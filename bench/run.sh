#!/usr/bin/env bash
# Issue 4's comparison harness: SmolLM2-135M-Instruct, 1 thread, TinyRustLM vs llama.cpp
# (native, node-llama-cpp's prebuilt binaries) and vs wllama (Chromium), Q8_0 and Q4_0,
# 3 alternated rounds each, medians and ratios. Idempotent: every step skips work already
# done (npm install, GGUF requantization, .slm conversion, builds are incremental).
#
#   bench/run.sh [native|browser|all] [--rounds N]
#
# Results: bench/results/{native,browser}.{json,md}. Needs the Q4_1 source GGUF in
# ~/.cache/tinyrustlm/models (scripts/fetch-models.sh), Chromium at /usr/bin/chromium and
# the repo's node_modules (Playwright); gguf-py goes into ~/.cache/tinyrustlm/venv.
set -euo pipefail
cd "$(dirname "$0")"
BENCH_DIR="$PWD"
REPO="$(cd .. && pwd)"
export TINYRUSTLM_CACHE="${TINYRUSTLM_CACHE:-$HOME/.cache/tinyrustlm}"
export PATH="$HOME/.cargo/bin:$PATH"
LOCK=/tmp/tinyrustlm-build.lock
what="${1:-all}"; [ $# -gt 0 ] && shift

# Never let a tool fetch binaries or browsers from the network.
export NODE_LLAMA_CPP_SKIP_DOWNLOAD=true PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1

# 1. npm packages (node-llama-cpp with its prebuilt linux-x64 llama.cpp, wllama)
if [ ! -d node_modules/node-llama-cpp ] || [ ! -d node_modules/@wllama/wllama ]; then
  npm install --no-audit --no-fund --ignore-scripts
fi

# 1b. the repo's own npm packages (Playwright without its browsers), for browser.mjs
if [ ! -d "$REPO/node_modules/@playwright/test" ]; then
  (cd "$REPO" && npm ci --no-audit --no-fund)
fi

# 2. Q8_0 and Q4_0 GGUFs from the Q4_1 one, with gguf-py from PyPI in its own venv
if [ ! -x "$TINYRUSTLM_CACHE/venv/bin/python" ] || ! "$TINYRUSTLM_CACHE/venv/bin/python" -c 'import gguf' 2>/dev/null; then
  python3 -m venv "$TINYRUSTLM_CACHE/venv"
  "$TINYRUSTLM_CACHE/venv/bin/pip" install --quiet 'gguf==0.19.0' 'numpy==2.4.6'
fi
"$TINYRUSTLM_CACHE/venv/bin/python" make_gguf.py

# 3. slm (native), incremental
(cd "$REPO" && CARGO_TARGET_DIR="$TINYRUSTLM_CACHE/target" flock "$LOCK" cargo build --release -p slm-cli)

if [ "$what" = native ] || [ "$what" = all ]; then
  node native.mjs "$@"                # 1 thread: results/native.*
  node native.mjs --threads 2 "$@"    # 2 threads: results/native-2t.*
fi

if [ "$what" = browser ] || [ "$what" = all ]; then
  # builds the web app (scripts/build-web.sh) first if dist/ lacks window.tinyrustlm.bench
  node browser.mjs "$@"
fi

echo
for f in results/native.md results/native-2t.md results/browser.md; do
  if [ -f "$f" ]; then cat "$f"; echo; fi
done
