import { test, expect } from '@playwright/test';
import { open, pickFile, greedy, say, assistantMessages, catalogEntry, cachedEntry, holdDownloadAt, QWEN_ID } from './helpers.mjs';

// A download runs in the background: chatting with the loaded model goes on. Cancelled
// at 30%, it leaves a partial that cannot be loaded, and Resume completes it from the
// chunks it kept.
test('a download never blocks the chat, and one cancelled at 30% resumes cleanly', async ({ page }) => {
  const errors = await open(page);
  await pickFile(page);
  await greedy(page, 8);
  await holdDownloadAt(page, 40, QWEN_ID);
  await catalogEntry(page, QWEN_ID).getByRole('button', { name: 'Download' }).click();
  const bar = page.getByRole('progressbar', { name: 'Download progress' });
  await expect(bar).toBeVisible();

  // A turn while the download runs.
  await say(page, 'Name a colour.');
  await expect(assistantMessages(page)).toHaveCount(1);
  await expect(assistantMessages(page).first()).not.toBeEmpty();

  await expect.poll(async () => Number(await bar.getAttribute('aria-valuenow')), { timeout: 300_000 })
    .toBeGreaterThanOrEqual(30);
  await page.getByRole('button', { name: 'Cancel download' }).click();
  await expect(page.locator('.notice')).toContainText('was cancelled at chunk');
  await expect(page.getByRole('alert')).toHaveCount(0);
  const partial = cachedEntry(page, QWEN_ID);
  await expect(partial.locator('.cached-state')).toContainText('partial');
  await expect(partial.getByRole('button', { name: 'Load' })).toHaveCount(0);
  const done = Number((await partial.locator('.cached-state').textContent()).match(/partial (\d+)/)[1]);
  expect(done).toBeGreaterThan(0);

  await partial.getByRole('button', { name: 'Resume' }).click();
  await expect(cachedEntry(page, QWEN_ID).locator('.cached-state')).toHaveText('verified', { timeout: 300_000 });
  expect(errors).toEqual([]);
});
