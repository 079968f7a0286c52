// Static server for the built app (dist/) and local .slm models, on loopback.
//
//   node scripts/serve.mjs --root dist --port 8080 --slm path/to/slm \
//     --model path/to/model.slm[=id] ...
//
// - /models/<file>.slm: the models given with --model, with HTTP Range support (the
//   app downloads in verified, resumable chunks).
// - /models/<file>.slm.evidence.json: the quality-gate evidence (`slm gate`) written
//   beside a model, when there is one; its catalog entry then names it.
// - /models.json: the catalog. Entries for the local models (size and whole-file
//   SHA-256 computed here; tensor types and memory needs from `slm --json inspect`,
//   the runtime's own plan) replace catalog entries with the same id, so the page
//   works with no outside network.
// - Every response is cross-origin isolated (COOP same-origin, COEP require-corp), so
//   the page gets shared memory and runs the threaded worker; --no-isolation leaves
//   the headers off (the page then runs on one thread and says why).
// - Every response carries the app's Content-Security-Policy (scripts/csp.mjs, with
//   the hash of the inline script in the served index.html).
// - Model files carry an ETag and a Last-Modified, and a Range request whose If-Range
//   names another version gets the whole current file (200), as RFC 9110 says: a
//   resumed download then knows the file changed under it.
// - With --test-hooks only (the e2e suite's fault injection), each for the next model
//   response(s):
//     /__test/cut?after=N[,M…]     drop the connection after N bytes (then M, …);
//     /__test/corrupt?at=N         flip the byte at file offset N (if the response has it);
//     /__test/stall?after=N        send N bytes, then nothing, holding the connection open;
//     /__test/status?code=C&count=K  answer HTTP C to the next K model requests;
//     /__test/replace?file=F&with=G  serve model file G's bytes at F's URL from now on,
//                                  as a new version (new ETag; G = F is a touched file);
//                                  with &at=cut, at the moment the next cut drops its
//                                  connection (so the resume sees the new version, with
//                                  no race against the client's speed);
//   and /__test/log lists the requests served.
//
// Hostile requests get a 4xx, never a crash: a malformed path encoding or Host
// header, and paths outside --root (a sibling directory sharing its name's prefix
// included). Files of any size are hashed and served as streams.
import { execFileSync } from 'node:child_process';
import { createServer } from 'node:http';
import { createReadStream, readFileSync, statSync, existsSync, openSync, readSync, closeSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { basename, extname, join, normalize, resolve, sep } from 'node:path';
import { policy } from './csp.mjs';

const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : dflt;
};
const root = resolve(opt('--root', 'dist'));
const port = Number(opt('--port', '8080'));
const host = opt('--host', '127.0.0.1');
const testHooks = args.includes('--test-hooks');
const isolated = !args.includes('--no-isolation');
const slm = opt('--slm', null);
const models = [];
args.forEach((a, i) => {
  if (a !== '--model') return;
  const [path, id] = args[i + 1].split('=');
  const file = basename(path);
  models.push({ path: resolve(path), file, id: id || file.replace(/\.slm$/, '') });
});

// In 16 MiB pieces: a whole-file read fails past 2 GiB.
function sha256File(path) {
  const h = createHash('sha256');
  const fd = openSync(path, 'r');
  const buf = Buffer.allocUnsafe(16 << 20);
  try {
    for (;;) {
      const n = readSync(fd, buf, 0, buf.length, null);
      if (n === 0) break;
      h.update(buf.subarray(0, n));
    }
  } finally {
    closeSync(fd);
  }
  return h.digest('hex');
}

if (models.length && !slm) {
  console.error('serve.mjs: --model needs --slm (the CLI that reads each manifest)');
  process.exit(2);
}

// What the manifest says: tensor types by bytes, and the memory plan's inputs. A file
// the CLI cannot read is still served (the page then names what is wrong with it).
function inspect(path) {
  try {
    const v = JSON.parse(execFileSync(slm, ['--json', 'inspect', path], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], maxBuffer: 1 << 26 }));
    const bytes = {};
    for (const t of v.tensors) bytes[t.dtype] = (bytes[t.dtype] || 0) + t.length;
    const quant = Object.entries(bytes).sort((a, b) => b[1] - a[1]).map(([d]) => d).join(' + ');
    return { quant: `${quant} (by bytes)`, memory: v.memory.needs, source: v.provenance.source_files.map((f) => f.name).join(', ') };
  } catch (e) {
    return { quant: '?', source: `unreadable manifest: ${e.message.split('\n')[0]}` };
  }
}

const evidenceOf = (m) => (existsSync(`${m.path}.evidence.json`) ? `${m.path}.evidence.json` : null);
const nameOf = {
  'smollm2-135m-instruct': 'SmolLM2-135M-Instruct (Q4_1 + Q8_0, as published)',
  'qwen2.5-coder-0.5b-instruct': 'Qwen2.5-Coder-0.5B-Instruct (Q4_K_M, as published)',
};
const local = models.map((m) => {
  const info = inspect(m.path);
  return {
    id: m.id,
    name: nameOf[m.id] || m.id,
    url: `models/${m.file}`,
    size: statSync(m.path).size,
    sha256: sha256File(m.path),
    quant: info.quant,
    license: 'see the model card',
    source: `${info.source}, served locally by scripts/serve.mjs`,
    ...(evidenceOf(m) ? { evidence: `models/${m.file}.evidence.json` } : {}),
    ...(info.memory ? { memory: info.memory } : {}),
  };
});

function catalog() {
  let base = [];
  const p = join(root, 'models.json');
  if (existsSync(p)) base = JSON.parse(readFileSync(p, 'utf8'));
  const ids = new Set(local.map((e) => e.id));
  // A local file that is the published one (same hash) keeps its measured behaviour gate.
  const withGate = local.map((e) => {
    const pub = base.find((b) => b.id === e.id && b.sha256 === e.sha256 && b.behaviour);
    return pub ? { ...e, behaviour: pub.behaviour } : e;
  });
  return JSON.stringify([...withGate, ...base.filter((e) => !ids.has(e.id))], null, 2);
}

const types = {
  '.html': 'text/html; charset=utf-8', '.js': 'text/javascript', '.mjs': 'text/javascript',
  '.wasm': 'application/wasm', '.css': 'text/css', '.json': 'application/json',
  '.slm': 'application/octet-stream', '.png': 'image/png', '.svg': 'image/svg+xml',
  '.webmanifest': 'application/manifest+json',
};

// Cut points for the next model responses, in order (a response shorter than the
// first waits for a longer one).
let cutAfter = [];
let corruptAt = null;
let stallAfter = null;
let statusFault = { code: 0, count: 0 };
// file name → { path, version } once /__test/replace has swapped it.
const replaced = new Map();
// A replace armed for the moment of the next cut: { file, path }.
let replaceAtCut = null;

function replaceNow(file, path) {
  const version = (replaced.get(file)?.version ?? 0) + 1;
  replaced.set(file, { path, version });
  return version;
}
const log = [];

// A version tag for what is served under a URL: the file's size and mtime, and how
// many times the test hooks replaced it.
function validators(path, version) {
  const st = statSync(path);
  return {
    etag: `"${st.size.toString(16)}-${Math.floor(st.mtimeMs).toString(16)}-${version}"`,
    lastModified: new Date(st.mtimeMs).toUTCString(),
  };
}

// Send the first `limit` bytes of `stream`, then stop reading it and run `after` (the
// response is never ended: the fault hooks' dropped or stalled connection).
function sendThen(stream, res, limit, after) {
  let sent = 0;
  stream.on('data', (buf) => {
    if (sent + buf.length >= limit) {
      res.write(buf.subarray(0, limit - sent));
      stream.destroy();
      after();
      return;
    }
    sent += buf.length;
    res.write(buf);
  });
}

function serveModel(req, res, path, version = 0) {
  const size = statSync(path).size;
  const { etag, lastModified } = validators(path, version);
  let range = req.headers.range;
  // If-Range: the range only if the client's version is still the one served.
  const ifRange = req.headers['if-range'];
  const stale = Boolean(range && ifRange && ifRange !== etag && ifRange !== lastModified);
  if (stale) range = undefined;
  if (statusFault.count > 0) {
    statusFault.count -= 1;
    log.push({ path: req.url, range: range || null, status: statusFault.code });
    res.writeHead(statusFault.code, statusFault.code === 416 ? { 'Content-Range': `bytes */${size}` } : {});
    return res.end();
  }
  let start = 0, end = size - 1, status = 200;
  if (range) {
    const m = /^bytes=(\d+)-(\d*)$/.exec(range);
    if (!m) { res.writeHead(416, { 'Content-Range': `bytes */${size}` }); return res.end(); }
    start = Number(m[1]);
    end = m[2] ? Math.min(Number(m[2]), size - 1) : size - 1;
    if (start > end || start >= size) { res.writeHead(416, { 'Content-Range': `bytes */${size}` }); return res.end(); }
    status = 206;
  }
  const entry = { path: req.url, range: range || null, start, end, cut: false, stale, etag };
  log.push(entry);
  const headers = {
    'Content-Type': types['.slm'], 'Accept-Ranges': 'bytes', 'Content-Length': end - start + 1,
    'Cache-Control': 'no-store', ETag: etag, 'Last-Modified': lastModified,
  };
  if (status === 206) headers['Content-Range'] = `bytes ${start}-${end}/${size}`;
  res.writeHead(status, headers);
  if (req.method === 'HEAD') return res.end();
  const stream = createReadStream(path, { start, end });
  stream.on('error', () => res.destroy());
  if (corruptAt !== null && corruptAt >= start && corruptAt <= end) {
    const at = corruptAt - start;
    corruptAt = null;
    entry.corrupt = at + start;
    let sent = 0;
    stream.on('data', (buf) => {
      if (at >= sent && at < sent + buf.length) {
        buf = Buffer.from(buf);
        buf[at - sent] ^= 0x5a;
      }
      sent += buf.length;
      res.write(buf);
    });
    stream.on('end', () => res.end());
    return;
  }
  if (stallAfter !== null && end - start + 1 > stallAfter) {
    entry.stalled = true;
    // Nothing more, and no end: the client has to notice. Let go after a minute.
    sendThen(stream, res, stallAfter, () => setTimeout(() => res.socket?.destroy(), 60_000).unref());
    stallAfter = null;
    return;
  }
  if (cutAfter.length && end - start + 1 > cutAfter[0]) {
    entry.cut = true;
    sendThen(stream, res, cutAfter.shift(), () => {
      if (replaceAtCut) {
        replaceNow(replaceAtCut.file, replaceAtCut.path);
        entry.replacedAtCut = true;
        replaceAtCut = null;
      }
      res.socket.destroy(); // a dropped connection, mid-body
    });
    return;
  }
  stream.pipe(res);
}

// Whether `file` is `root` or inside it (a plain prefix test would admit /dist2).
const inside = (file) => file === root || file.startsWith(root + sep);

// The policy of the index.html being served, recomputed when the file changes.
let csp = { mtime: -1, value: null };
function cspHeader() {
  const index = join(root, 'index.html');
  if (!existsSync(index)) return null;
  const mtime = statSync(index).mtimeMs;
  if (mtime !== csp.mtime) csp = { mtime, value: policy(readFileSync(index, 'utf8'), { header: true }) };
  return csp.value;
}

// A test hook's answer: what it armed, in words.
function hookReply(res, text) {
  res.writeHead(200, { 'Content-Type': 'text/plain' });
  return res.end(text);
}

function handle(req, res) {
  const policyHeader = cspHeader();
  if (policyHeader) res.setHeader('Content-Security-Policy', policyHeader);
  if (isolated) {
    res.setHeader('Cross-Origin-Opener-Policy', 'same-origin');
    res.setHeader('Cross-Origin-Embedder-Policy', 'require-corp');
  }
  // The Host header plays no part: a malformed one cannot break the parse.
  let url, p;
  try {
    url = new URL(req.url, 'http://localhost');
    p = decodeURIComponent(url.pathname);
  } catch {
    res.writeHead(400, { 'Content-Type': 'text/plain' });
    return res.end('malformed request path\n');
  }
  if (p.includes('\0')) { res.writeHead(400); return res.end('malformed request path\n'); }
  if (testHooks && p === '/__test/cut') {
    cutAfter = url.searchParams.get('after').split(',').map(Number);
    return hookReply(res, `next model responses cut after ${cutAfter.join(', ')} bytes\n`);
  }
  if (testHooks && p === '/__test/corrupt') {
    corruptAt = Number(url.searchParams.get('at'));
    return hookReply(res, `next model response covering byte ${corruptAt} has it flipped\n`);
  }
  if (testHooks && p === '/__test/stall') {
    stallAfter = Number(url.searchParams.get('after'));
    return hookReply(res, `next model response stalls after ${stallAfter} bytes\n`);
  }
  if (testHooks && p === '/__test/status') {
    statusFault = { code: Number(url.searchParams.get('code')), count: Number(url.searchParams.get('count') || 1) };
    return hookReply(res, `next ${statusFault.count} model requests answer ${statusFault.code}\n`);
  }
  if (testHooks && p === '/__test/replace') {
    const file = url.searchParams.get('file');
    const src = models.find((m) => m.file === url.searchParams.get('with'));
    if (!models.some((m) => m.file === file) || !src) { res.writeHead(404); return res.end('no such model\n'); }
    if (url.searchParams.get('at') === 'cut') {
      replaceAtCut = { file, path: src.path };
      return hookReply(res, `${file} will serve ${src.file} from the next cut on\n`);
    }
    const version = replaceNow(file, src.path);
    return hookReply(res, `${file} now serves ${src.file}, version ${version}\n`);
  }
  if (testHooks && p === '/__test/log') {
    res.writeHead(200, { 'Content-Type': 'application/json' });
    return res.end(JSON.stringify(log));
  }
  if (p === '/models.json') {
    res.writeHead(200, { 'Content-Type': types['.json'], 'Cache-Control': 'no-cache' });
    return res.end(catalog());
  }
  if (p.startsWith('/models/') && p.endsWith('.evidence.json')) {
    const m = models.find((m) => `/models/${m.file}.evidence.json` === p && evidenceOf(m));
    if (!m) { res.writeHead(404); return res.end('no such evidence\n'); }
    res.writeHead(200, { 'Content-Type': types['.json'], 'Cache-Control': 'no-cache' });
    return res.end(readFileSync(evidenceOf(m)));
  }
  if (p.startsWith('/models/')) {
    const m = models.find((m) => `/models/${m.file}` === p);
    if (!m) { res.writeHead(404); return res.end('no such model\n'); }
    const r = replaced.get(m.file);
    return serveModel(req, res, r ? r.path : m.path, r ? r.version : 0);
  }
  let file = normalize(join(root, p));
  if (!inside(file)) { res.writeHead(403); return res.end(); }
  if (existsSync(file) && statSync(file).isDirectory()) file = join(file, 'index.html');
  if (!existsSync(file) || !statSync(file).isFile()) { res.writeHead(404); return res.end('not found\n'); }
  res.writeHead(200, {
    'Content-Type': types[extname(file)] || 'application/octet-stream',
    'Cache-Control': 'no-cache',
  });
  const stream = createReadStream(file);
  stream.on('error', () => res.destroy());
  stream.pipe(res);
}

createServer((req, res) => {
  try {
    handle(req, res);
  } catch (e) {
    // Never down for one bad request.
    console.error(`serve.mjs: ${req.method} ${JSON.stringify(req.url)}: ${e.message}`);
    if (!res.headersSent) res.writeHead(500);
    res.end();
  }
}).listen(port, host, () => {
  console.log(`TinyRustLM on http://${host}:${port}/ (models: ${local.map((e) => e.id).join(', ') || 'none'})`);
});
