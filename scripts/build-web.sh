#!/usr/bin/env bash
# Build the web app into dist/ with Trunk (release, offline, simd128), then the
# threaded inference worker beside it (shared memory, for cross-origin isolated pages).
set -euo pipefail
cd "$(dirname "$0")/.."
export TINYRUSTLM_CACHE="${TINYRUSTLM_CACHE:-$HOME/.cache/tinyrustlm}"
export PATH="$PWD/node_modules/.bin:$HOME/.cargo/bin:$PATH"
export CARGO_PROFILE_RELEASE_DEBUG=0
cargo fetch --locked
# Its own target dir: RUSTFLAGS differ from the native build's, and sharing would
# rebuild everything each time.
CARGO_TARGET_DIR="$TINYRUSTLM_CACHE/target-web" RUSTFLAGS="-C target-feature=+simd128" \
  trunk build index.html --release

# The threaded worker: std rebuilt with atomics (nightly's build-std), a shared memory
# the page's pool workers instantiate the same module on (public/pool.js). The
# flags are the ones ../shared/toolchain.md verified.
mt_target="$TINYRUSTLM_CACHE/target-web-mt"
mt_flags="-C target-feature=+atomics,+bulk-memory,+mutable-globals,+simd128"
for a in --shared-memory --max-memory=4294967296 --import-memory --export=__wasm_init_tls \
  --export=__tls_size --export=__tls_align --export=__tls_base; do
  mt_flags="$mt_flags -C link-arg=$a"
done
rustup +nightly component add rust-src >/dev/null 2>&1 || true
rustup +nightly target add wasm32-unknown-unknown >/dev/null 2>&1 || true
CARGO_TARGET_DIR="$mt_target" RUSTFLAGS="$mt_flags" \
  cargo +nightly build --release --locked --target wasm32-unknown-unknown \
  -Z build-std=std,panic_abort --bin worker
wasm-bindgen --target no-modules --no-typescript --out-dir dist --out-name worker_mt \
  "$mt_target/wasm32-unknown-unknown/release/worker.wasm"
wasm-opt -O3 --one-caller-inline-max-function-size 1000 --enable-threads --enable-simd --enable-bulk-memory --enable-mutable-globals \
  --enable-nontrapping-float-to-int --enable-sign-ext \
  dist/worker_mt_bg.wasm -o dist/worker_mt_bg.wasm

# The Content-Security-Policy as a meta tag, with the hash of Trunk's inline script.
node scripts/csp.mjs dist/index.html
