// Native speed comparison, 1 thread: TinyRustLM (`slm bench`) vs llama.cpp (node-llama-cpp's
// prebuilt linux-x64 CPU binaries), SmolLM2-135M-Instruct at Q8_0 and Q4_0, runs alternated.
//
//   node bench/native.mjs [--rounds 3] [--prompt 128] [--gen 128] [--out bench/results]
//                         [--quants Q8_0,Q4_0,Qwen-Q4_K_M] [--threads 1] [--name native]
//
// Both engines get the same GGUF weights (bench/make_gguf.py; `slm convert` copies
// matching q8_0/q4_0 blocks losslessly), the same 128-token prompt ("The quick brown
// fox jumps over the lazy dog. " repeated, no BOS) and the same work:
//   prefill  = evaluating the whole prompt in one batch (llama-bench pp128) and picking
//              the first token;
//   decode   = 128 further single-token steps after the prompt, greedy, EOS ignored
//              (llama-bench tg128 starts from an empty context; here both engines decode
//              at positions 128..255, which is what `slm bench` measures).
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { SLM, cpuFlags, PROMPT_TEXT, provenance, slmModel, summarize } from './common.mjs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

process.env.NODE_LLAMA_CPP_SKIP_DOWNLOAD = 'true';
const { getLlama, LlamaLogLevel } = await import('node-llama-cpp');

const here = dirname(fileURLToPath(import.meta.url));
const REPO_DIR = resolve(here, '..');
const args = process.argv.slice(2);
const opt = (n, d) => (args.includes(n) ? args[args.indexOf(n) + 1] : d);
const ROUNDS = Number(opt('--rounds', 3));
const PROMPT = Number(opt('--prompt', 128));
const GEN = Number(opt('--gen', 128));
const OUT = resolve(opt('--out', join(here, 'results')));
const QUANTS = (opt('--quants', 'Q8_0,Q4_0')).split(',');
const THREADS = Number(opt('--threads', 1));
const BASE = opt('--name', THREADS === 1 ? 'native' : `native-${THREADS}t`);
// The CPU's SIMD flags, recorded with every result (kernel paths depend on them).

function runSlm(path) {
  const out = execFileSync(SLM, [
    '--json', 'bench', path, '--prompt-tokens', String(PROMPT), '--gen-tokens', String(GEN), '--threads', String(THREADS),
  ], { encoding: 'utf8' });
  const r = JSON.parse(out);
  return { prefill_tok_s: r.prefill_tok_s, decode_tok_s: r.decode_tok_s, raw: r };
}

const llama = await getLlama({
  gpu: false, build: 'never', skipDownload: true, usePrebuiltBinaries: true,
  maxThreads: THREADS, logLevel: LlamaLogLevel.error, progressLogs: false,
});

async function runLlama(model) {
  const context = await model.createContext({
    contextSize: 512, batchSize: 512, threads: { ideal: THREADS, min: THREADS }, sequences: 1,
  });
  try {
    const seq = context.getSequence();
    let ids = model.tokenize(PROMPT_TEXT.repeat(PROMPT), false);
    ids = ids.slice(0, PROMPT);
    const it = seq.evaluate(ids, { temperature: 0, yieldEogToken: true });
    let t = performance.now();
    let r = await it.next(); // prompt in one batch + first (greedy) token
    const prefill = (performance.now() - t) / 1000;
    t = performance.now();
    for (let i = 0; i < GEN; i++) {
      r = await it.next(); // one decode step each
      if (r.done) throw new Error(`generation stopped after ${i} tokens`);
    }
    const decode = (performance.now() - t) / 1000;
    await it.return();
    return { prefill_tok_s: PROMPT / prefill, decode_tok_s: GEN / decode };
  } finally {
    await context.dispose();
  }
}

const slmVersion = execFileSync(SLM, ['--version'], { encoding: 'utf8' }).trim();
const results = {
  date: new Date().toISOString(),
  machine: { cores: (await import('node:os')).cpus().length, cpu: (await import('node:os')).cpus()[0]?.model, cpu_flags: cpuFlags, loadavg_start: (await import('node:os')).loadavg() },
  setup: {
    threads: THREADS, prompt_tokens: PROMPT, gen_tokens: GEN, rounds: ROUNDS,
    tinyrustlm: slmVersion, llama_cpp: `node-llama-cpp 3.21.1, prebuilt linux-x64 ${llama.gpu === false ? 'CPU' : llama.gpu} binaries (ggml ${llama.llamaCppRelease?.release ?? '?'}; CPU variant picked at load)`,
  },
  repo: provenance(REPO_DIR),
  quants: {},
};

for (const q of QUANTS) {
  const { gguf, slm } = slmModel(q);
  const model = await llama.loadModel({ modelPath: gguf, gpuLayers: 0 });
  // warm-up (page cache, first-touch): one short run each, not recorded
  await runLlama(model);
  runSlm(slm);
  const runs = { tinyrustlm: [], llama_cpp: [] };
  for (let round = 0; round < ROUNDS; round++) {
    // alternate which engine goes first
    const order = round % 2 ? ['llama_cpp', 'tinyrustlm'] : ['tinyrustlm', 'llama_cpp'];
    for (const eng of order) {
      const r = eng === 'tinyrustlm' ? runSlm(slm) : await runLlama(model);
      runs[eng].push({ prefill_tok_s: r.prefill_tok_s, decode_tok_s: r.decode_tok_s });
      console.error(`${q} round ${round + 1} ${eng}: prefill ${r.prefill_tok_s.toFixed(1)} tok/s, decode ${r.decode_tok_s.toFixed(1)} tok/s`);
    }
  }
  await model.dispose();
  results.quants[q] = summarize(runs, 'llama_cpp');
}
results.machine.loadavg_end = (await import('node:os')).loadavg();

const f1 = (x) => x.toFixed(1);
const f2 = (x) => x.toFixed(2);
let md = `Native, ${THREADS} thread${THREADS === 1 ? '' : 's'}, ${[...new Set(QUANTS.map((q) => slmModel(q).name))].join(' and ')}, pp${PROMPT}/tg${GEN}, median of ${ROUNDS} alternated rounds (${results.date.slice(0, 10)}); ${results.machine.cpu} [${cpuFlags.join(' ')}]\n\n`;
md += '| quant | TinyRustLM prefill | llama.cpp prefill | ratio | TinyRustLM decode | llama.cpp decode | ratio |\n';
md += '|---|---:|---:|---:|---:|---:|---:|\n';
for (const [q, r] of Object.entries(results.quants)) {
  md += `| ${q} | ${f1(r.median.tinyrustlm.prefill_tok_s)} | ${f1(r.median.llama_cpp.prefill_tok_s)} | ${f2(r.ratio_tinyrustlm_over_llama_cpp.prefill)} | ${f1(r.median.tinyrustlm.decode_tok_s)} | ${f1(r.median.llama_cpp.decode_tok_s)} | ${f2(r.ratio_tinyrustlm_over_llama_cpp.decode)} |\n`;
}
md += '\nMedian of the rounds\' own ratios (each round ran both engines back to back):\n\n';
md += '| quant | prefill | decode |\n|---|---:|---:|\n';
for (const [q, r] of Object.entries(results.quants)) {
  md += `| ${q} | ${f2(r.paired_ratio_tinyrustlm_over_llama_cpp.prefill)} | ${f2(r.paired_ratio_tinyrustlm_over_llama_cpp.decode)} |\n`;
}
md += `\n(tok/s; ratio = TinyRustLM / llama.cpp; load average ${results.machine.loadavg_start.map(f2).join(' ')} → ${results.machine.loadavg_end.map(f2).join(' ')})\n`;
mkdirSync(OUT, { recursive: true });
writeFileSync(join(OUT, `${BASE}.json`), JSON.stringify(results, null, 2) + '\n');
writeFileSync(join(OUT, `${BASE}.md`), md);
console.log(md);
await llama.dispose();
