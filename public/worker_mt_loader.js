// The threaded inference worker (shared memory; scripts/build-web.sh builds it), which
// the page starts instead of worker_loader.js when it is cross-origin isolated.
importScripts('./worker_mt.js');
wasm_bindgen('./worker_mt_bg.wasm');
