import { test, expect } from '@playwright/test';
import { open, dropFile, greedy, say, shot, assistantMessages } from './helpers.mjs';

test('drag and drop a local .slm, kept in the browser, then chat', async ({ page }) => {
  const errors = await open(page);
  await page.getByLabel('Keep in browser').check();
  await dropFile(page, 'smollm2-135m-instruct', 'smollm2-dropped.slm');
  await expect(page.locator('.card')).toBeVisible({ timeout: 300_000 });
  await expect(page.locator('.card')).toContainText('93 verified');
  const kept = page.locator('.cached-model');
  await expect(kept).toHaveCount(1);
  await expect(kept.locator('.cached-state')).toHaveText('verified');
  await greedy(page);
  await say(page, 'Say hello.');
  await expect(assistantMessages(page).last()).not.toBeEmpty();
  await shot(page, '05-dropped-file-chat');
  expect(errors).toEqual([]);
});

test('a corrupted file is rejected with the bad chunk named, and nothing is kept', async ({ page }) => {
  await open(page);
  await page.getByLabel('Keep in browser').check();
  await dropFile(page, 'corrupt-smollm2', 'corrupt.slm');
  const alert = page.getByRole('alert');
  await expect(alert).toContainText('chunk 3', { timeout: 300_000 });
  await expect(alert).toContainText('First bad chunk: 3.');
  await expect(alert).toContainText('checksum');
  await shot(page, '06-corrupted-file');
  await expect(page.locator('.card')).toHaveCount(0);
  await expect(page.locator('.cached-model')).toHaveCount(0);
});
