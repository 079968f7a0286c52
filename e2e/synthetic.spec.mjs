import { test, expect } from '@playwright/test';
import { open, pickFile, greedy, say, assistantMessages, memoryWithinPlan } from './helpers.mjs';

// Opt-in scale test (not in CI): a Qwen2-shaped 1.54B model with random Q4_K weights
// (reference/synthetic_qwen2_1_5b.py, then `slm convert`), loaded in Chromium from a
// file. It must load, answer, and stay within its memory plan. Run with
//   E2E_SYNTHETIC=path/to/synthetic.slm scripts/e2e.sh   (or playwright test synthetic)
const model = process.env.E2E_SYNTHETIC;

test('a synthetic 1.5B Q4_K model loads, answers and stays within its memory plan', async ({ page }) => {
  test.skip(!model, 'set E2E_SYNTHETIC to a converted synthetic 1.5B .slm');
  const errors = await open(page);
  const t0 = Date.now();
  await pickFile(page, model);
  console.log(`synthetic 1.5B: loaded in ${((Date.now() - t0) / 1e3).toFixed(1)} s (card: ${await page.locator('.card dd').filter({ hasText: / s$/ }).last().textContent()})`);
  await memoryWithinPlan(page);
  await greedy(page, 8);
  const reason = await say(page, 'Hello');
  expect(reason).toMatch(/Stop reason: (eos_token|max_tokens)/);
  await expect(assistantMessages(page).last()).not.toBeEmpty();
  const r = await page.evaluate(() => window.tinyrustlm.bench(64, 16));
  console.log(`synthetic 1.5B in Chromium, 1 thread: prefill ${r.prefill_tok_s.toFixed(1)} tok/s, decode ${r.decode_tok_s.toFixed(1)} tok/s (pp64/tg16)`);
  expect(errors).toEqual([]);
});
