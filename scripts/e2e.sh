#!/usr/bin/env bash
# Browser tests: the built app in Debian's Chromium with the real SmolLM2 and Qwen2.5
# models.
# Prints "N passed, N failed" like scripts/test.sh; screenshots go to
# target/e2e/screenshots.
set -euo pipefail
cd "$(dirname "$0")/.."
export TINYRUSTLM_CACHE="${TINYRUSTLM_CACHE:-$HOME/.cache/tinyrustlm}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$TINYRUSTLM_CACHE/target}"
scripts/web-tools.sh
export E2E_MODEL="$(scripts/model.sh smollm2)"
export E2E_QWEN="$(scripts/model.sh qwen)"
export E2E_SLM="$CARGO_TARGET_DIR/release/slm"
export E2E_EVIDENCE="$E2E_MODEL.evidence.json"
# A copy with one byte flipped inside data chunk 3: loading it must name chunk 3.
export E2E_CORRUPT="$TINYRUSTLM_CACHE/slm/corrupt-smollm2.slm"
node -e '
  const fs = require("fs");
  const [src, dst] = process.argv.slice(1);
  const b = fs.readFileSync(src);
  const manifestLen = Number(b.readBigUInt64LE(16));
  const dataOffset = Math.ceil((56 + manifestLen) / 64) * 64;
  b[dataOffset + 3 * (1 << 20) + 1000] ^= 0xff;
  fs.writeFileSync(dst, b);
' "$E2E_MODEL" "$E2E_CORRUPT"
scripts/build-web.sh
out="$PWD/target/e2e"
rm -rf "$out" && mkdir -p "$out"
export E2E_OUT="$out/results" E2E_SCREENSHOTS="$out/screenshots"
log="$(mktemp)"
set +e
(cd e2e && ../node_modules/.bin/playwright test -c playwright.config.mjs) 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
passed=$(grep -Eo '^ +[0-9]+ passed' "$log" | awk '{s+=$1} END {print s+0}' || true)
failed=$(grep -Eo '^ +[0-9]+ failed' "$log" | awk '{s+=$1} END {print s+0}' || true)
rm -f "$log"
echo "$passed passed, $failed failed"
exit "$status"
