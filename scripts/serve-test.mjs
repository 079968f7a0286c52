// scripts/serve.mjs against hostile requests: each gets a 4xx and the server keeps
// serving. Model-free and quick (the first step of scripts/test.sh).
//   node scripts/serve-test.mjs
import { spawn } from 'node:child_process';
import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const base = mkdtempSync(join(tmpdir(), 'serve-test-'));
const root = join(base, 'dist');
mkdirSync(root);
mkdirSync(join(base, 'dist2'));
writeFileSync(join(root, 'index.html'), '<p>app</p>');
writeFileSync(join(base, 'dist2', 'secret.txt'), 'secret');
writeFileSync(join(base, 'secret.txt'), 'secret');
// A "model" the CLI cannot read (`false` stands in for it): still served, with ranges.
writeFileSync(join(base, 'm.slm'), Buffer.alloc(4096, 7));
const PORT = 8139;

const server = spawn(process.execPath, [process.env.SERVE || join(here, 'serve.mjs'), '--root', root, '--port', String(PORT),
  '--slm', 'false', '--model', join(base, 'm.slm')], {
  stdio: ['ignore', 'pipe', 'inherit'],
});
await new Promise((ok, fail) => {
  server.stdout.on('data', (d) => String(d).includes('TinyRustLM on') && ok());
  server.on('exit', (c) => fail(new Error(`serve.mjs exited ${c}`)));
});

// A raw request, so that malformed paths and headers reach the server as written.
const raw = (lines) => new Promise((ok, fail) => {
  const s = connect(PORT, '127.0.0.1');
  let out = '';
  s.on('data', (d) => { out += d; });
  s.on('end', () => ok(out));
  s.on('error', fail);
  s.write(lines.join('\r\n') + '\r\n\r\n');
});
const status = async (path, headers = ['Host: 127.0.0.1']) => {
  const r = await raw([`GET ${path} HTTP/1.1`, ...headers, 'Connection: close']);
  return Number(r.split(' ')[1]);
};

let failed = 0;
const check = async (what, got, want) => {
  const ok = Array.isArray(want) ? want.includes(got) : got === want;
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}: ${got}${ok ? '' : ` (want ${want})`}`);
  if (!ok) failed++;
};

await check('the app', await status('/'), 200);
await check('a malformed escape', await status('/%'), 400);
await check('a malformed Host header', await status('/', ['Host: [::1']), [200, 400]);
await check('no Host header (Node itself answers 400)', await status('/', []), [200, 400]);
await check('a sibling directory sharing the prefix', await status('/..%2fdist2%2fsecret.txt'), 403);
await check('the parent directory', await status('/..%2fsecret.txt'), 403);
await check('a NUL byte', await status('/index.html%00'), 400);
await check('test hooks off by default: cut', await status('/__test/cut?after=10'), 404);
await check('test hooks off by default: log', await status('/__test/log'), 404);
for (const hook of ['corrupt?at=1', 'stall?after=1', 'status?code=500', 'replace?file=m.slm&with=m.slm']) {
  await check(`test hooks off by default: ${hook}`, await status(`/__test/${hook}`), 404);
}
await check('a directory without index.html', await status('/no-such-dir/'), 404);

// Model files: a version tag, and If-Range honoured (RFC 9110): the range only while
// the client's version is the one served, else the whole file.
const head = await raw(['HEAD /models/m.slm HTTP/1.1', 'Host: 127.0.0.1', 'Connection: close']);
const etag = /^etag: (.*)$/im.exec(head)?.[1]?.trim();
const lastModified = /^last-modified: (.*)$/im.exec(head)?.[1]?.trim();
await check('a model has an ETag', Boolean(etag), true);
await check('a model has a Last-Modified', Boolean(lastModified), true);
const range = ['Host: 127.0.0.1', 'Range: bytes=100-199'];
await check('a range', await status('/models/m.slm', range), 206);
await check('a range, If-Range the current ETag', await status('/models/m.slm', [...range, `If-Range: ${etag}`]), 206);
await check('a range, If-Range the current date', await status('/models/m.slm', [...range, `If-Range: ${lastModified}`]), 206);
await check('a range, If-Range another version', await status('/models/m.slm', [...range, 'If-Range: "0-0-0"']), 200);
await check('a range past the end', await status('/models/m.slm', ['Host: 127.0.0.1', 'Range: bytes=5000-']), 416);
await check('still serving after all that', await status('/index.html'), 200);
server.kill();
if (failed) {
  console.error(`${failed} serve.mjs check(s) failed`);
  process.exit(1);
}
console.log('serve.mjs: every hostile request refused, server alive');
