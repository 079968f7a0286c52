// Times the browser's kernels in V8 (node), from outside the wasm module
// (runtime/examples/wasm_probe.rs), to find where the page's decode time goes:
//   node bench/wasm_probe.mjs path/to/wasm_probe.wasm [model.slm]
// READ_AHEAD=0 runs without the kernels' read-ahead, 2 reads every line ahead, 1 (the
// default) one line per page (`kernels::ReadAhead`).
// With a model: the tok/s of 64 decode steps (run under `node --cpu-prof` to see where
// they go).
// Prints GB/s of weight bytes for q8_0 / q4_0 matvecs (streamed from memory, and
// resident in cache), and µs per activation quantization and per attention pass.
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';

const wasm = process.argv[2];
const imports = {};
const mod = new WebAssembly.Module(readFileSync(wasm));
for (const i of WebAssembly.Module.imports(mod)) {
  imports[i.module] ??= {};
  imports[i.module][i.name] = () => { throw new Error(`import ${i.module}.${i.name} called`); };
}
const e = new WebAssembly.Instance(mod, imports).exports;
// The page chooses the read-ahead by measuring; READ_AHEAD picks it here.
if (process.env.READ_AHEAD) e.read_ahead(Number(process.env.READ_AHEAD));
// Best ms per call over `rounds` rounds of `k` calls (a single short call is below the
// clock's resolution).
const best = (f, k, rounds = 5) => {
  let b = Infinity;
  for (let r = 0; r < rounds; r++) {
    const t = performance.now();
    for (let i = 0; i < k; i++) f();
    b = Math.min(b, (performance.now() - t) / k);
  }
  return b;
};
if (!process.argv[3]) {
for (const [name, dt] of [['q8_0', 0], ['q4_0', 1], ['q5_0', 3], ['q4_k', 4], ['q6_k', 5]]) {
  for (const [rows, cols] of [[1536, 512], [512, 1536]]) {
    e.setup(dt, rows, cols, 1);
    let bytes = 0;
    const res = best(() => { bytes = e.matvec(); }, 400);
    const one = bytes;
    e.setup(dt, rows, cols, 160);
    const str = best(() => { bytes = e.matvec(); }, 2);
    const raw = name === 'q8_0' ? best(() => { e.stream(); }, 2) : 0;
    console.log(`${name} ${rows}x${cols}: resident ${(one / res / 1e6).toFixed(2)} GB/s, streamed ${(bytes / str / 1e6).toFixed(2)} GB/s${raw ? `, raw read ${(bytes / raw / 1e6).toFixed(2)} GB/s` : ''}`);
  }
}
e.setup(1, 16, 576, 1);
console.log(`quantize 576: ${(best(() => e.quantize(), 10000) * 1e3).toFixed(2)} µs`);
e.setup(2, 256, 64, 1);
console.log(`attention 256 positions x 64: ${(best(() => e.attend(), 10000) * 1e3).toFixed(2)} µs`);
}

if (process.argv[3]) {
  const file = readFileSync(process.argv[3]);
  const p = e.alloc(file.length);
  new Uint8Array(e.memory.buffer, p, file.length).set(file);
  const rc = e.load_model();
  if (rc) throw new Error(`load_model: ${rc}`);
  // Each of n calls of f timed alone, in ms.
  const timesOf = (f, n) => Array.from({ length: n }, () => {
    const t0 = performance.now();
    f();
    return performance.now() - t0;
  });
  // WARM=1: the page's load-time warm-up, then each of the first prefills timed alone
  // (V8 starts a function in baseline code and optimizes it once it has run hot).
  if (process.env.WARM === '1') {
    const each = [...timesOf(() => e.warm_up(), 1), ...timesOf(() => e.prefill(40), 8)];
    console.log(`warm-up, then prefills of 40 tokens: ${each.map((x) => x.toFixed(0)).join(' ')} ms`);
  }
  // PREFILL=0 skips the prefill timing (a decode-only profile).
  if (process.env.PREFILL !== '0') {
    e.prefill(40);
    // The mean and the best of 8 (the best is the steadier on a shared machine).
    const each = timesOf(() => e.prefill(40), 8);
    const mean = each.reduce((a, b) => a + b) / each.length;
    console.log(`prefill of 40 tokens: ${mean.toFixed(1)} ms, best ${Math.min(...each).toFixed(1)} ms`);
  }
  // ROOM=n: the same prefill into a cache with room for n more positions (a chat
  // session's cache spans its whole context), alternated with the short cache.
  if (process.env.ROOM) {
    const room = Number(process.env.ROOM);
    const best = { short: Infinity, long: Infinity };
    for (let i = 0; i < 6; i++) {
      for (const [k, r] of [['short', 0], ['long', room]]) {
        best[k] = Math.min(best[k], ...timesOf(() => e.prefill_room(40, r), 1));
      }
    }
    console.log(`prefill of 40 tokens, best of 6: ${best.short.toFixed(1)} ms, with room for ${room} more ${best.long.toFixed(1)} ms`);
  }
  e.decode(4);
  const t = performance.now();
  // STEPS decode steps (256 unless set).
  const steps = Number(process.env.STEPS ?? 256);
  e.decode(steps);
  console.log(`decode: ${(steps / ((performance.now() - t) / 1e3)).toFixed(1)} tok/s (incl. an 8-token prefill)`);
}
