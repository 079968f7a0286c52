import { test, expect } from '@playwright/test';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { open, pickFile } from './helpers.mjs';

// The same .slm and messages through the native CLI and through the worker's wasm.
const CASES = [
  [{ role: 'user', content: 'What is the capital of France?' }],
  [{ role: 'system', content: 'Answer in one line.' },
   { role: 'user', content: 'Übersetze: «naïve café» – and count 1 2 3 🤖' }],
];
const GREEDY_TOKENS = 16;

function native(messages, model = process.env.E2E_MODEL) {
  const slm = process.env.E2E_SLM;
  const dir = mkdtempSync(join(tmpdir(), 'slm-parity-'));
  const m = join(dir, 'messages.json'), l = join(dir, 'logits.f32');
  writeFileSync(m, JSON.stringify(messages));
  const tok = JSON.parse(execFileSync(slm, ['--json', 'tokenize', model, '--messages', m]));
  execFileSync(slm, ['logits', model, '--messages', m, '--out', l]);
  const buf = readFileSync(l);
  const logits = new Float32Array(buf.buffer, buf.byteOffset, buf.length / 4);
  const gen = JSON.parse(execFileSync(slm, ['--json', 'generate', model, '--messages', m,
    '--max-tokens', String(GREEDY_TOKENS)]));
  return { rendered: tok.rendered, ids: tok.ids, logits, greedy: gen.ids };
}

// SmolLM2 (q4_1 + q8_0) and Qwen2.5-Coder-0.5B (q5_0, q4_k, q6_k, q8_0): every block
// type the catalog ships, through the simd128 kernels against the CLI's.
for (const [name, model] of [['SmolLM2', process.env.E2E_MODEL], ['Qwen2.5', process.env.E2E_QWEN]]) test(`the wasm runtime in Chromium reproduces the native CLI on the same .slm (${name})`, async ({ page }) => {
  await open(page);
  await pickFile(page, model);
  for (const messages of CASES) {
    const want = native(messages, model);
    const got = await page.evaluate(([m, n]) => window.tinyrustlm.probe(m, n), [messages, GREEDY_TOKENS]);
    expect(got.rendered).toBe(want.rendered);
    expect(got.ids).toEqual(want.ids);
    expect(got.logits.length).toBe(want.logits.length);
    let worst = 0, differing = 0;
    for (let i = 0; i < want.logits.length; i++) {
      // JSON carries the shortest decimal of each f32; fround recovers the f32 bits.
      const g = Math.fround(got.logits[i]);
      worst = Math.max(worst, Math.abs(g - want.logits[i]));
      differing += g !== want.logits[i];
    }
    console.log(`case ${JSON.stringify(messages).slice(0, 40)}…: ${want.ids.length} ids, max |logit diff| ${worst.toExponential(2)}, ${differing} of ${want.logits.length} logits not bit-identical, greedy ${got.greedy.length} tokens`);
    expect(worst).toBeLessThanOrEqual(1e-3);
    // One summation order on every kernel path and f64-rounded transcendentals: the
    // browser's simd128 and the CLI's AVX2 give the same bits (runtime/src/kernels).
    expect(differing).toBe(0);
    expect(got.greedy).toEqual(want.greedy);
  }
});

// Seeded sampling: the chat preset with a seed, through the CLI and through the worker,
// token for token (the effective sampler is the CLI's own, from generate --json).
test('seeded sampling in Chromium equals the native CLI, token for token', async ({ page }) => {
  await open(page);
  await pickFile(page);
  const slm = process.env.E2E_SLM, model = process.env.E2E_MODEL;
  const dir = mkdtempSync(join(tmpdir(), 'slm-seeded-'));
  for (const [k, messages] of CASES.entries()) {
    const m = join(dir, `m${k}.json`);
    writeFileSync(m, JSON.stringify(messages));
    for (const seed of [7, 8]) {
      const cli = JSON.parse(execFileSync(slm, ['--json', 'generate', model, '--messages', m,
        '--preset', 'chat', '--seed', String(seed), '--max-tokens', '32']));
      expect(cli.greedy).toBe(false);
      const got = await page.evaluate(([msgs, s]) => window.tinyrustlm.probe(msgs, 32, s), [messages, cli.sampler]);
      expect(got.sampled).toEqual(cli.ids);
      expect(got.sampled_text).toBe(cli.text);
      console.log(`seeded chat preset, seed ${seed}: ${cli.ids.length} tokens equal`);
    }
  }
});

// Every command carries a request id that its replies answer (src/protocol.rs): a probe
// overtaken by a newer one is rejected, and the newer one gets its own answer, never the
// older one's (with a single slot and no ids, the first reply resolved the second call).
test('overlapping probes: each answer goes to the request it answers', async ({ page }) => {
  await open(page);
  await pickFile(page);
  const [a, b] = CASES;
  const got = await page.evaluate(async ([a, b]) => {
    const first = window.tinyrustlm.probe(a, 2).then((r) => ({ ok: r.rendered }), (e) => ({ err: String(e) }));
    const second = window.tinyrustlm.probe(b, 2).then((r) => ({ ok: r.rendered }), (e) => ({ err: String(e) }));
    return [await first, await second];
  }, [a, b]);
  expect(got[0].err).toContain('a newer probe or bench replaced this one');
  expect(got[1].ok).toBe(native(b).rendered);
});

// Gate evidence attached by hand: a record for another file is rejected, naming the
// hash; the model's own record verifies it.
test('gate evidence is checked against the loaded file', async ({ page }) => {
  await open(page);
  await pickFile(page);
  await expect(page.locator('.card .warning')).toContainText('Not verified against a reference');
  const good = readFileSync(process.env.E2E_EVIDENCE, 'utf8');
  const other = JSON.parse(good);
  other.file.data_sha256 = '0'.repeat(64);
  const dir = mkdtempSync(join(tmpdir(), 'slm-evidence-'));
  writeFileSync(join(dir, 'other.evidence.json'), JSON.stringify(other));
  writeFileSync(join(dir, 'own.evidence.json'), good);
  const picker = page.getByLabel('Attach gate evidence');
  await picker.setInputFiles(join(dir, 'other.evidence.json'));
  await expect(page.locator('.card .evidence .rejected')).toContainText('the evidence is for another file');
  await expect(page.locator('.card .quality-gate')).not.toHaveText('reference-verified');
  await picker.setInputFiles(join(dir, 'own.evidence.json'));
  await expect(page.locator('.card .quality-gate')).toHaveText('reference-verified');
  await expect(page.locator('.card .evidence .verified')).toContainText('reference-verified against transformers 5.24.0');
  await expect(page.locator('.card .warning')).toHaveCount(0);
});
