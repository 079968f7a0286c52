#!/usr/bin/env bash
# Tools for the web app and its browser tests, each installed only when missing:
# Trunk 0.21.14, wasm-bindgen-cli 0.2.130 (the exact version of the crate), Debian's
# Chromium + ChromeDriver, and from npm (package-lock.json) Playwright and binaryen's
# wasm-opt 132. Nothing is downloaded from GitHub; no browser is downloaded by npm.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
rustup target list --installed | grep -qx wasm32-unknown-unknown || rustup target add wasm32-unknown-unknown
if ! trunk --version 2>/dev/null | grep -q '0.21.14'; then
  echo "== installing trunk 0.21.14 (10-20 minutes, once)"
  cargo install --locked trunk --version 0.21.14
fi
if ! wasm-bindgen --version 2>/dev/null | grep -q '0.2.130'; then
  echo "== installing wasm-bindgen-cli 0.2.130 (about 7 minutes, once)"
  # Not --locked: its lockfile wants a crate version the registry mirror lacks.
  cargo install wasm-bindgen-cli --version 0.2.130
fi
if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then
  echo "== installing chromium and chromium-driver from Debian"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq && $SUDO apt-get install -y -qq chromium chromium-driver
fi
if [ ! -x node_modules/.bin/wasm-opt ] || [ ! -x node_modules/.bin/playwright ]; then
  echo "== npm ci (Playwright without browsers, binaryen 132)"
  PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund
fi
