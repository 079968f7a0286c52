#!/usr/bin/env bash
# Runs runtime/tests/kernels.rs as wasm32 with simd128 under node: the only check of the
# simd128 kernels. wasm32-unknown-unknown has no stdout, so the verdict is the exit:
# a failing test aborts the module (a trap), a passing run returns from main.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target-wasm}"
RUSTFLAGS="-C target-feature=+simd128" cargo test --release -p slm-runtime \
  --target wasm32-unknown-unknown --test kernels --no-run
wasm=$(ls -t "$CARGO_TARGET_DIR"/wasm32-unknown-unknown/release/deps/kernels-*.wasm | head -1)
node - "$wasm" <<'JS'
const fs = require("fs");
const mod = new WebAssembly.Module(fs.readFileSync(process.argv[2]));
if (!WebAssembly.Module.exports(mod).some((e) => e.name === "main")) throw new Error("no main export");
// Host imports (wasm-bindgen shims of dependencies) must not be reached by these tests.
const imports = {};
for (const i of WebAssembly.Module.imports(mod)) {
  imports[i.module] ??= {};
  imports[i.module][i.name] = () => { throw new Error(`host import ${i.module}.${i.name} called`); };
}
new WebAssembly.Instance(mod, imports).exports.main(0, 0);
console.log("wasm simd128 kernel tests passed");
JS
