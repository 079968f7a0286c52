// Tiny loopback server for the wllama side of bench/browser.mjs.
//
//   node bench/serve_wllama.mjs --port 8132 --model /path/X.Q8_0.gguf --model /path/X.Q4_0.gguf
//
// - /            : a page that imports wllama and exposes window.wbench.{load, run}
// - /wllama/...  : node_modules/@wllama/wllama (esm/index.js, esm/wasm/wllama.wasm)
// - /models/<f>  : the GGUFs given with --model (HTTP Range supported)
// No COOP/COEP headers, so the page is not cross-origin isolated: no SharedArrayBuffer,
// and wllama runs its wasm single-threaded. With --isolated, every response carries
// them, and wllama runs its pthreads build with the threads `load` asks for.
import { createServer } from 'node:http';
import { createReadStream, existsSync, statSync } from 'node:fs';
import { basename, dirname, extname, join, normalize, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const port = Number(args.includes('--port') ? args[args.indexOf('--port') + 1] : 8132);
const isolated = args.includes('--isolated');
const models = new Map();
args.forEach((a, i) => { if (a === '--model') models.set(basename(args[i + 1]), resolve(args[i + 1])); });
const wllamaRoot = join(here, 'node_modules/@wllama/wllama');

const PAGE = `<!doctype html><meta charset="utf-8"><title>wllama bench</title>
<script type="module">
import { Wllama } from '/wllama/esm/index.js';
let w = null;
window.wbench = {
  async load(url, nCtx, nThreads = 1) {
    if (w) { await w.exit(); w = null; }
    w = new Wllama({ default: '/wllama/esm/wasm/wllama.wasm' }, { suppressNativeLog: true });
    await w.loadModelFromUrl(new URL(url, location.href).href, {
      n_ctx: nCtx, n_batch: 512, n_ubatch: 512, n_threads: nThreads, n_gpu_layers: 0,
    });
    return { multithread: w.isMultithread(), threads: w.getNumThreads(),
             isolated: self.crossOriginIsolated, info: w.getLoadedContextInfo().n_ctx };
  },
  // prompt: token ids; gen: tokens to generate (EOS ignored, greedy, no prompt cache).
  async run(prompt, gen) {
    const t0 = performance.now();
    const r = await w.createCompletion({
      prompt, max_tokens: gen, temperature: 0, ignore_eos: true, cache_prompt: false,
    });
    return { wall_ms: performance.now() - t0, timings: r.timings, usage: r.usage };
  },
};
window.wbenchReady = true;
</script>`;

const types = { '.js': 'text/javascript', '.mjs': 'text/javascript', '.wasm': 'application/wasm',
  '.json': 'application/json', '.map': 'application/json' };

function sendFile(req, res, path, type) {
  const size = statSync(path).size;
  let start = 0, end = size - 1, status = 200;
  const m = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range || '');
  if (m) {
    start = Number(m[1]); end = m[2] ? Math.min(Number(m[2]), size - 1) : size - 1; status = 206;
    if (start > end) { res.writeHead(416, { 'Content-Range': `bytes */${size}` }); return res.end(); }
  }
  const h = { 'Content-Type': type, 'Content-Length': end - start + 1, 'Accept-Ranges': 'bytes',
    'Cache-Control': 'no-store' };
  if (status === 206) h['Content-Range'] = `bytes ${start}-${end}/${size}`;
  res.writeHead(status, h);
  if (req.method === 'HEAD') return res.end();
  createReadStream(path, { start, end }).pipe(res);
}

createServer((req, res) => {
  if (isolated) {
    res.setHeader('Cross-Origin-Opener-Policy', 'same-origin');
    res.setHeader('Cross-Origin-Embedder-Policy', 'require-corp');
  }
  const url = new URL(req.url, 'http://x');
  const p = decodeURIComponent(url.pathname);
  if (p === '/' || p === '/index.html') {
    res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
    return res.end(PAGE);
  }
  if (p.startsWith('/models/') && models.has(p.slice(8))) {
    return sendFile(req, res, models.get(p.slice(8)), 'application/octet-stream');
  }
  if (p.startsWith('/wllama/')) {
    const f = normalize(join(wllamaRoot, p.slice(8)));
    if (f.startsWith(wllamaRoot) && existsSync(f) && statSync(f).isFile()) {
      return sendFile(req, res, f, types[extname(f)] || 'application/octet-stream');
    }
  }
  res.writeHead(404); res.end('not found');
}).listen(port, '127.0.0.1', () => console.error(`wllama bench server on http://127.0.0.1:${port}/`));
