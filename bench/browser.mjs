// Browser speed comparison in Chromium via Playwright: TinyRustLM (the built app in
// dist/, `window.tinyrustlm.bench`) vs wllama 3.13.0 (llama.cpp in wasm), on the same
// GGUF weights (SmolLM2-135M-Instruct Q8_0 and Q4_0 by default), runs alternated.
// --threads 1 (the default): wllama served without COOP/COEP, so single-threaded, and
// TinyRustLM's Threads setting at 1. --threads N: both cross-origin isolated, on N.
//
//   node bench/browser.mjs [--threads 1] [--rounds 3] [--prompt 128] [--gen 128] [--out bench/results]
//
// Same weights (bench/make_gguf.py GGUFs; the .slm files are lossless conversions), same
// 128-token prompt (wllama gets the text that tokenizes to exactly those ids), greedy,
// EOS ignored, a fresh context each run (wllama: cache_prompt false). Both report
// llama-server-style rates: prefill = prompt tokens / prompt time; decode = generated
// tokens / time from the end of prefill to the last token (the first token comes out of
// prefill, so 128 tokens take 127 single-token forward passes, on both sides).
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SLM, PROMPT_TEXT, argOpt, cpuFlags, provenance, slmModel, summarize } from './common.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, '..');
const REPO_DIR = repo;
const args = process.argv.slice(2);
const ROUNDS = Number(argOpt(args, '--rounds', 3));
const PROMPT = Number(argOpt(args, '--prompt', 128));
const GEN = Number(argOpt(args, '--gen', 128));
const OUT = resolve(argOpt(args, '--out', join(here, 'results')));
const QUANTS = argOpt(args, '--quants', 'Q8_0,Q4_0').split(',');
const THREADS = Number(argOpt(args, '--threads', 1));
// Results go to <out>/<name>.{json,md}.
const BASE = argOpt(args, '--name', 'browser');
const APP_PORT = 8131;
const WL_PORT = 8132;
const TIMEOUT = 10 * 60_000;

const { chromium } = await import(join(repo, 'node_modules/playwright/index.mjs')).catch(
  () => import(join(repo, 'node_modules/@playwright/test/index.mjs')),
);

const models = Object.fromEntries(QUANTS.map((q) => [q, slmModel(q)]));

// Prompt: the same text and truncation as `slm bench` and the app's bench hook. wllama's
// completion API takes text only (a token-id array prompt crashes its worker glue), so it
// gets the longest whole-word prefix of that text whose tokenization is exactly the first
// PROMPT ids (checked with `slm tokenize`; wllama's own prompt_n is checked per run).
const tokenize = (text) => JSON.parse(execFileSync(SLM, ['--json', 'tokenize', models[QUANTS[0]].slm,
  '--text', text], { encoding: 'utf8' })).ids;
const fullText = PROMPT_TEXT.repeat(PROMPT / 4 + 8);
const ids = tokenize(fullText).slice(0, PROMPT);
const words = fullText.split(' ');
let lo = 1, hi = words.length; // smallest word count with >= PROMPT tokens
while (lo < hi) {
  const mid = (lo + hi) >> 1;
  if (tokenize(words.slice(0, mid).join(' ')).length >= PROMPT) hi = mid; else lo = mid + 1;
}
const promptText = words.slice(0, lo).join(' ');
if (JSON.stringify(tokenize(promptText)) !== JSON.stringify(ids)) {
  throw new Error(`no whole-word prefix tokenizes to the ${PROMPT} bench ids`);
}

const children = [];
function serve(cmd, argv, port) {
  const p = spawn(cmd, argv, { stdio: ['ignore', 'ignore', 'pipe'] });
  children.push(p);
  let err = '';
  p.stderr.on('data', (d) => { err += d; });
  p.on('exit', (c) => { if (c) console.error(`${argv[0]} exited ${c}: ${err}`); });
  return waitFor(`http://127.0.0.1:${port}/`);
}
async function waitFor(url) {
  for (let i = 0; i < 100; i++) {
    try { if ((await fetch(url)).ok) return; } catch {}
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`server ${url} did not come up`);
}
const cleanup = () => { for (const c of children) { try { c.kill(); } catch {} } };
process.on('exit', cleanup);
process.on('SIGINT', () => { cleanup(); process.exit(130); });

const buildWeb = () => execFileSync('flock', ['/tmp/tinyrustlm-build.lock', join(repo, 'scripts/build-web.sh')], { stdio: 'inherit' });
// A fresh clone has no dist/ at all, and the server needs one to start.
if (!existsSync(join(repo, 'dist/index.html'))) {
  console.error('no dist/: building the web app (scripts/build-web.sh)');
  buildWeb();
}
await serve(process.execPath, [join(repo, 'scripts/serve.mjs'), '--root', join(repo, 'dist'), '--slm', SLM,
  '--port', String(APP_PORT), ...QUANTS.flatMap((q) => ['--model', `${models[q].slm}=bench-${q.toLowerCase()}`])], APP_PORT);
await serve(process.execPath, [join(here, 'serve_wllama.mjs'), '--port', String(WL_PORT),
  ...(THREADS > 1 ? ['--isolated'] : []),
  ...QUANTS.flatMap((q) => ['--model', models[q].gguf])], WL_PORT);

const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
const browserVersion = browser.version();

async function newPage(url) {
  const ctx = await browser.newContext();
  const page = await ctx.newPage();
  page.setDefaultTimeout(TIMEOUT);
  page.on('pageerror', (e) => console.error(`[page error] ${e.message}`));
  await page.goto(url);
  return { ctx, page };
}

async function openApp(q) {
  const { ctx, page } = await newPage(`http://127.0.0.1:${APP_PORT}/`);
  await page.waitForFunction(() => window.tinyrustlm !== undefined, null, { timeout: 60_000 }).catch(() => {});
  const hasBench = await page.evaluate(() => typeof window.tinyrustlm?.bench === 'function');
  if (!hasBench) {
    await ctx.close();
    return null;
  }
  await page.getByLabel('Choose a .slm file').setInputFiles(models[q].slm);
  await page.locator('.card').first().waitFor({ state: 'visible', timeout: TIMEOUT });
  const threads = page.getByRole('combobox', { name: 'Threads' });
  await threads.selectOption(String(THREADS));
  await page.waitForFunction((n) => document.querySelector('select[aria-label="Threads"]')?.value === String(n), THREADS);
  return { ctx, page };
}

async function openWllama(q) {
  const { ctx, page } = await newPage(`http://127.0.0.1:${WL_PORT}/`);
  await page.waitForFunction(() => window.wbenchReady === true);
  const file = models[q].gguf.split('/').pop();
  const info = await page.evaluate(([f, n, t]) => window.wbench.load(`/models/${f}`, n, t), [file, 512, THREADS]);
  const want = THREADS === 1 ? { multithread: false, threads: 1, isolated: false }
    : { multithread: true, threads: THREADS, isolated: true };
  if (info.multithread !== want.multithread || info.threads !== want.threads || info.isolated !== want.isolated) {
    throw new Error(`wllama is not on ${THREADS} thread(s): ${JSON.stringify(info)}`);
  }
  return { ctx, page, info };
}

const runApp = async (page) => {
  const r = await page.evaluate(([p, g]) => window.tinyrustlm.bench(p, g), [PROMPT, GEN]);
  if (r.prompt_tokens !== PROMPT || r.gen_tokens !== GEN || r.threads !== THREADS) throw new Error(`TinyRustLM bench: ${JSON.stringify(r)}`);
  return { prefill_tok_s: r.prefill_tok_s, decode_tok_s: r.decode_tok_s, simd128: r.simd128 };
};
const runWllama = async (page) => {
  const r = await page.evaluate(([p, g]) => window.wbench.run(p, g), [promptText, GEN]);
  const t = r.timings;
  if (!t || t.prompt_n !== PROMPT || t.predicted_n !== GEN) throw new Error(`wllama: ${JSON.stringify(r)}`);
  return { prefill_tok_s: t.prompt_per_second, decode_tok_s: t.predicted_per_second };
};

// The app must have the bench hook (it lands in dist/ with a web build).
{
  const probe = await openApp(QUANTS[0]);
  if (!probe) {
    console.error('dist/ has no window.tinyrustlm.bench: building the web app (scripts/build-web.sh)');
    buildWeb();
  } else {
    await probe.ctx.close();
  }
}

const results = {
  date: new Date().toISOString(),
  machine: { cores: cpus().length, cpu: cpus()[0]?.model, cpu_flags: cpuFlags, loadavg_start: loadavg() },
  setup: {
    threads: THREADS, prompt_tokens: PROMPT, gen_tokens: GEN, rounds: ROUNDS,
    browser: `Chromium ${browserVersion} headless`, wllama: `@wllama/wllama 3.13.0 (libllama b12211-7d7f028; default JSPI + Memory64 build, ${THREADS === 1 ? 'single-thread: no COOP/COEP' : `${THREADS} threads, COOP/COEP`}; CPU, n_gpu_layers 0)`,
    tinyrustlm: `dist/ (scripts/build-web.sh, simd128; threaded worker, ${THREADS} thread(s))`,
  },
  repo: provenance(REPO_DIR),
  quants: {},
};

for (const q of QUANTS) {
  const app = await openApp(q);
  if (!app) throw new Error('dist/ still has no window.tinyrustlm.bench after building');
  const wl = await openWllama(q);
  // warm-up, not recorded
  await runApp(app.page);
  await runWllama(wl.page);
  const runs = { tinyrustlm: [], wllama: [] };
  let simd128;
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 ? ['wllama', 'tinyrustlm'] : ['tinyrustlm', 'wllama'];
    for (const eng of order) {
      const r = eng === 'tinyrustlm' ? await runApp(app.page) : await runWllama(wl.page);
      if (eng === 'tinyrustlm') simd128 = r.simd128;
      runs[eng].push({ prefill_tok_s: r.prefill_tok_s, decode_tok_s: r.decode_tok_s });
      console.error(`${q} round ${round + 1} ${eng}: prefill ${r.prefill_tok_s.toFixed(1)} tok/s, decode ${r.decode_tok_s.toFixed(1)} tok/s`);
    }
  }
  await app.ctx.close();
  await wl.ctx.close();
  results.quants[q] = summarize(runs, 'wllama');
  results.quants[q].median.tinyrustlm.simd128 = simd128;
}
results.machine.loadavg_end = loadavg();
await browser.close();
cleanup();

const f1 = (x) => x.toFixed(1);
const f2 = (x) => x.toFixed(2);
const modelNames = [...new Set(QUANTS.map((q) => models[q].name))].join(' and ');
let md = `Browser (${results.setup.browser}), ${THREADS} thread(s), ${modelNames}, pp${PROMPT}/tg${GEN}, median of ${ROUNDS} alternated rounds (${results.date.slice(0, 10)}); ${results.machine.cpu} [${cpuFlags.join(' ')}]\n\n`;
md += '| quant | TinyRustLM prefill | wllama prefill | ratio | TinyRustLM decode | wllama decode | ratio |\n';
md += '|---|---:|---:|---:|---:|---:|---:|\n';
for (const [q, r] of Object.entries(results.quants)) {
  md += `| ${q} | ${f1(r.median.tinyrustlm.prefill_tok_s)} | ${f1(r.median.wllama.prefill_tok_s)} | ${f2(r.ratio_tinyrustlm_over_wllama.prefill)} | ${f1(r.median.tinyrustlm.decode_tok_s)} | ${f1(r.median.wllama.decode_tok_s)} | ${f2(r.ratio_tinyrustlm_over_wllama.decode)} |\n`;
}
md += '\nMedian of the rounds\' own ratios (each round ran both engines back to back):\n\n';
md += '| quant | prefill | decode |\n|---|---:|---:|\n';
for (const [q, r] of Object.entries(results.quants)) {
  md += `| ${q} | ${f2(r.paired_ratio_tinyrustlm_over_wllama.prefill)} | ${f2(r.paired_ratio_tinyrustlm_over_wllama.decode)} |\n`;
}
md += `\n(tok/s; ratio = TinyRustLM / wllama; load average ${results.machine.loadavg_start.map(f2).join(' ')} → ${results.machine.loadavg_end.map(f2).join(' ')})\n`;
mkdirSync(OUT, { recursive: true });
writeFileSync(join(OUT, `${BASE}.json`), JSON.stringify(results, null, 2) + '\n');
writeFileSync(join(OUT, `${BASE}.md`), md);
console.log(md);
process.exit(0);
