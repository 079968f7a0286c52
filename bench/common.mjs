// Shared helpers for bench/native.mjs and bench/browser.mjs.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

export const CACHE = process.env.TINYRUSTLM_CACHE || join(homedir(), '.cache/tinyrustlm');
export const BENCH = join(CACHE, 'bench');
export const SLM = process.env.SLM || join(CACHE, 'target/release/slm');
export const PROMPT_TEXT = 'The quick brown fox jumps over the lazy dog. ';

export const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

/** One quant's record: the runs, each engine's medians and TinyRustLM's ratio over
 * `other` (the engine key of llama.cpp or wllama in `runs`): the ratio of the medians,
 * and the median of the rounds' own ratios (`paired_ratio…`). Round i of both engines
 * ran back to back, so a paired ratio compares the two under the same load; on a
 * machine whose load comes in phases, the two medians can fall in different phases. */
export function summarize(runs, other) {
  const med = (eng, k) => median(runs[eng].map((r) => r[k]));
  const m = {};
  for (const eng of Object.keys(runs)) {
    m[eng] = { prefill_tok_s: med(eng, 'prefill_tok_s'), decode_tok_s: med(eng, 'decode_tok_s') };
  }
  const paired = (k) => median(runs.tinyrustlm.map((r, i) => r[k] / runs[other][i][k]));
  return {
    runs,
    median: m,
    [`ratio_tinyrustlm_over_${other}`]: {
      prefill: m.tinyrustlm.prefill_tok_s / m[other].prefill_tok_s,
      decode: m.tinyrustlm.decode_tok_s / m[other].decode_tok_s,
    },
    [`paired_ratio_tinyrustlm_over_${other}`]: {
      prefill: paired('prefill_tok_s'),
      decode: paired('decode_tok_s'),
    },
  };
}

export const argOpt = (args, n, d) => (args.includes(n) ? args[args.indexOf(n) + 1] : d);

/** The GGUF of a benchmark model and its .slm (converted with `slm convert`, which copies
 * the GGUF's quantized blocks byte for byte). `q` is a SmolLM2 type made by make_gguf.py
 * (Q8_0, Q4_0), or `Qwen-Q4_K_M`: Qwen2.5-Coder-0.5B-Instruct as fetched by
 * scripts/fetch-models.sh, converted with the default policy (every tensor kept).
 * Reconverts when the .slm is missing or older than the slm binary or the GGUF. */
export function slmModel(q) {
  const qwen = q === 'Qwen-Q4_K_M';
  const gguf = qwen
    ? join(CACHE, 'models', 'qwen2.5-coder-0.5b-instruct-q4_k_m.gguf')
    : join(BENCH, `SmolLM2-135M-Instruct.${q}.gguf`);
  const slm = qwen
    ? join(BENCH, 'qwen2.5-coder-0.5b-instruct-q4_k_m.slm')
    : join(BENCH, `SmolLM2-135M-Instruct.${q.toLowerCase()}.slm`);
  if (!existsSync(gguf)) throw new Error(`missing ${gguf}: run ${qwen ? 'scripts/fetch-models.sh' : 'bench/make_gguf.py'} first`);
  const stale = !existsSync(slm) || statSync(slm).mtimeMs < Math.max(statSync(SLM).mtimeMs, statSync(gguf).mtimeMs);
  if (stale) {
    const quant = qwen ? [] : ['--quant', q.toLowerCase()];
    const out = execFileSync(SLM, ['--json', 'convert', gguf, '-o', slm, ...quant],
      { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    const r = JSON.parse(out);
    console.error(`converted ${gguf} -> ${r.out} (${r.bytes} bytes, quant ${r.quant})`);
  }
  return { gguf, slm, name: qwen ? 'Qwen2.5-Coder-0.5B-Instruct' : 'SmolLM2-135M-Instruct' };
}

/** The repo state the figures belong to: HEAD, whether the tree has local changes, and
 * when the artifacts measured were built (the slm binary, dist/). */
export function provenance(repo) {
  const git = (...a) => { try { return execFileSync('git', ['-C', repo, ...a], { encoding: 'utf8' }).trim(); } catch { return null; } };
  const mtime = (p) => { try { return new Date(statSync(p).mtimeMs).toISOString(); } catch { return null; } };
  return {
    head: git('rev-parse', '--short', 'HEAD'),
    dirty: (git('status', '--porcelain', '--untracked-files=no') || '') !== '',
    slm_built: mtime(SLM),
    dist_built: mtime(join(repo, 'dist', 'index.html')),
  };
}

/** The CPU's SIMD flags (AVX*, AMX*, FMA, F16C), recorded with every figure. */
export const cpuFlags = (() => {
  try {
    const line = readFileSync('/proc/cpuinfo', 'utf8').split('\n').find((l) => l.startsWith('flags'));
    return line.split(':')[1].trim().split(/\s+/).filter((f) => /^(avx|amx|fma|f16c)/.test(f));
  } catch { return []; }
})();
