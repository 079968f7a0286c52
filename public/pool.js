// A pool thread of the threaded inference worker (src/worker/pool.rs): the same
// module on the same shared memory, then one rayon thread until the pool is dropped.
self.onmessage = async ({ data }) => {
  self.onmessage = null;
  importScripts('./worker_mt.js');
  await wasm_bindgen({ module_or_path: data.module, memory: data.memory });
  postMessage('ready');
  wasm_bindgen.pool_thread(data.handoff);
  close();
};
