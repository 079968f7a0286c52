import { test, expect } from '@playwright/test';
import { open, download, loadCached, greedy, say, shot, assistantMessages, memoryWithinPlan } from './helpers.mjs';

test('download with progress, cached, then chat; reload offline and chat again', async ({ page, context }) => {
  const errors = await open(page);
  await shot(page, '01-start');
  await download(page);
  await shot(page, '02-downloaded');
  await loadCached(page);
  // The catalog ships the model's gate evidence; the worker checked it against the file.
  await expect(page.locator('.card .quality-gate')).toHaveText('reference-verified');
  await expect(page.locator('.card .evidence .verified')).toContainText('worst cosine 0.999998, top-1 20/20');
  await expect(page.locator('.card .warning')).toHaveCount(0);
  // The catalog's plan was shown before the download; the worker measured the load.
  await memoryWithinPlan(page);
  await greedy(page);
  const reason = await say(page, 'What is the capital of France?');
  expect(reason).toMatch(/Stop reason: (eos_token|max_tokens)/);
  await expect(assistantMessages(page).last()).not.toBeEmpty();
  await expect(page.locator('.token-row').first()).toBeVisible();
  await expect(page.locator('.token-row').first().locator('.top')).toContainText('(');
  await shot(page, '03-chat');
  console.log(`page speed after download: ${await page.getByTestId('speed').textContent()}`);

  // Offline: the service worker serves the shell, IndexedDB the model.
  await context.setOffline(true);
  await page.reload();
  await expect(page.getByText('worker ready')).toBeVisible();
  await loadCached(page);
  // The evidence was stored with the model, so it is checked offline too.
  await expect(page.locator('.card .quality-gate')).toHaveText('reference-verified');
  await greedy(page);
  await say(page, 'Name a colour.');
  await expect(assistantMessages(page).last()).not.toBeEmpty();
  await shot(page, '04-offline-chat');
  await context.setOffline(false);
  expect(errors).toEqual([]);
});

test('a model URL added by hand downloads, its size taken from the server', async ({ page, baseURL }) => {
  await open(page);
  const file = process.env.E2E_MODEL.split('/').pop();
  await page.getByRole('textbox', { name: 'Model URL' }).fill(`${baseURL}models/${file}`);
  await page.getByRole('button', { name: 'Add' }).click();
  const id = `url-${file.replace(/\.slm$/, '')}`;
  const entry = page.locator(`.catalog-entry[data-id="${id}"]`);
  await entry.getByRole('button', { name: 'Download' }).click();
  const cached = page.locator(`.cached-model[data-id="${id}"]`);
  await expect(cached.locator('.cached-state')).toHaveText('verified', { timeout: 300_000 });
  await expect(cached.locator('.cached-size')).toHaveText('98.6 MB');
  await cached.getByRole('button', { name: 'Delete' }).click();
  await expect(cached).toHaveCount(0);
});
