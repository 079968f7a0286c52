import { test, expect } from '@playwright/test';
import { open, pickFile, greedy, say, assistantMessages } from './helpers.mjs';

// A worker that dies (here by the test hook's abort, the trap an allocation failure
// ends in) is replaced: the page says what was lost, keeps the transcript, and the
// model loads and chats again in the new worker.
test('a crashed worker is replaced, and the model loads and chats again', async ({ page }) => {
  await open(page);
  await pickFile(page);
  await greedy(page, 6);
  await say(page, 'Name a colour.');
  await expect(assistantMessages(page)).toHaveCount(1);
  await page.evaluate(() => window.tinyrustlm.crash());
  const error = page.getByRole('alert').filter({ hasText: 'the inference worker failed' });
  await expect(error).toContainText('a new worker was started: load the model again');
  await expect(page.locator('.card')).toHaveCount(0);
  await expect(page.getByText('worker ready')).toBeVisible();
  // The conversation on the page survives the worker.
  await expect(page.locator('.msg.user')).toHaveCount(1);
  await pickFile(page);
  await say(page, 'Name a fruit.');
  await expect(assistantMessages(page).last()).not.toBeEmpty();
});
