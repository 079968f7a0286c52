import { test, expect } from '@playwright/test';
import { open, pickFile } from './helpers.mjs';

// The page is cross-origin isolated (scripts/serve.mjs sends COOP/COEP), so it starts
// the threaded worker: shared memory, a pool of Web Workers running the same module.
// Threads split a product's rows into fixed tasks, so no count changes a result.
const MESSAGES = [{ role: 'user', content: 'Name three colours.' }];

const probe = (page) => page.evaluate((m) => window.tinyrustlm.probe(m, 8), MESSAGES);
const bench = (page) => page.evaluate(() => window.tinyrustlm.bench(32, 8));

test('an isolated page runs on several threads, and every count gives the same bits', async ({ page }) => {
  const errors = await open(page);
  expect(await page.evaluate(() => self.crossOriginIsolated)).toBe(true);
  const cores = await page.evaluate(() => navigator.hardwareConcurrency);
  test.skip(cores < 2, 'one core: nothing to split');
  const threads = page.getByRole('combobox', { name: 'Threads' });
  // The default: every core, up to 4.
  const dflt = Math.min(cores, 4);
  await expect(threads).toHaveValue(String(dflt));
  await expect(threads).toBeEnabled();
  await expect(threads.locator('option')).toHaveCount(cores);
  await expect(page.getByTestId('threads-note')).toHaveText('');

  await pickFile(page);
  const many = await probe(page);
  expect((await bench(page)).threads).toBe(dflt);

  // A chat turn, then one thread: the transcript stays, and the results are the same.
  await page.getByRole('textbox', { name: 'Message' }).fill('Hi');
  await page.getByRole('button', { name: 'Send' }).click();
  await expect(page.locator('.msg.assistant')).toHaveCount(1, { timeout: 120_000 });
  await expect(page.getByRole('button', { name: 'Send' })).toBeEnabled({ timeout: 120_000 });
  await threads.selectOption('1');
  await expect(threads).toHaveValue('1');
  expect((await bench(page)).threads).toBe(1);
  const one = await probe(page);
  expect(one.ids).toEqual(many.ids);
  expect(one.logits.length).toBe(many.logits.length);
  let differing = 0;
  for (let i = 0; i < one.logits.length; i++) differing += one.logits[i] !== many.logits[i];
  expect(differing).toBe(0);
  expect(one.greedy).toEqual(many.greedy);
  await expect(page.locator('.msg.user')).toHaveCount(1);
  await expect(page.locator('.msg.assistant')).toHaveCount(1);

  // And back: a new pool on the same memory.
  await threads.selectOption(String(cores));
  await expect(threads).toHaveValue(String(cores));
  const again = await probe(page);
  expect(again.logits).toEqual(many.logits);
  expect(errors).toEqual([]);
});

test('a page that is not cross-origin isolated runs on one thread and says why', async ({ page, baseURL }) => {
  const url = new URL(baseURL);
  url.port = String(Number(url.port) + 1);
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(url.href);
  await expect(page.getByText('worker ready')).toBeVisible();
  expect(await page.evaluate(() => self.crossOriginIsolated)).toBe(false);
  const threads = page.getByRole('combobox', { name: 'Threads' });
  await expect(threads).toHaveValue('1');
  await expect(threads).toBeDisabled();
  await expect(page.getByTestId('threads-note')).toContainText('not cross-origin isolated');
  await pickFile(page);
  const r = await probe(page);
  expect(r.greedy.length).toBeGreaterThan(0);
  expect((await bench(page)).threads).toBe(1);
  expect(errors).toEqual([]);
});
