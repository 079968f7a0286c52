#!/usr/bin/env bash
# Build the web app into dist/ with Trunk (release, offline, simd128).
set -euo pipefail
cd "$(dirname "$0")/.."
export TINYRUSTLM_CACHE="${TINYRUSTLM_CACHE:-$HOME/.cache/tinyrustlm}"
export PATH="$PWD/node_modules/.bin:$HOME/.cargo/bin:$PATH"
# Its own target dir: RUSTFLAGS differ from the native build's, and sharing would
# rebuild everything each time.
export CARGO_TARGET_DIR="$TINYRUSTLM_CACHE/target-web"
export RUSTFLAGS="-C target-feature=+simd128"
export CARGO_PROFILE_RELEASE_DEBUG=0
cargo fetch --locked
trunk build index.html --release
