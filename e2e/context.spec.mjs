import { test, expect } from '@playwright/test';
import { open, pickFile, greedy, say, shot, startLongReply } from './helpers.mjs';

const kvLength = async (page) =>
  Number((await page.getByTestId('kv-length').textContent()).match(/KV length (\d+)/)[1]);

test('reset context and clear transcript do different things; the divergence flag shows', async ({ page }) => {
  await open(page);
  await pickFile(page);
  await greedy(page, 8);
  await say(page, 'Name a fruit.');
  const kv = await kvLength(page);
  expect(kv).toBeGreaterThan(20);
  await expect(page.locator('.msg')).toHaveCount(2);

  // Reset: the KV cache empties, the transcript stays, the next turn re-reads it all.
  await page.getByRole('button', { name: 'Reset context' }).click();
  await expect(page.getByTestId('kv-length')).toHaveText(/KV length 0 \//);
  await expect(page.locator('.msg')).toHaveCount(2);
  await say(page, 'Another one?');
  await expect(page.locator('.turn-stats')).toContainText(': 0 reused from the KV cache');
  await expect(page.locator('.msg')).toHaveCount(4);

  // Clear: the messages go, the KV cache stays; the page flags the mismatch.
  const kv2 = await kvLength(page);
  await page.getByRole('button', { name: 'Clear transcript' }).click();
  await expect(page.locator('.msg')).toHaveCount(0);
  await expect(page.getByTestId('divergence')).toBeVisible();
  await expect(page.getByTestId('divergence')).toContainText(`${kv2} tokens`);
  expect(await kvLength(page)).toBe(kv2);
  await shot(page, '08-divergence');
  await say(page, 'Hi');
  // The system prompt prefix still matches and is reused.
  const reused = Number((await page.locator('.turn-stats').textContent()).match(/(\d+) reused/)[1]);
  expect(reused).toBeGreaterThan(0);
});

test('Stop ends a generation mid-stream and keeps the partial reply', async ({ page }) => {
  await open(page);
  await pickFile(page);
  await startLongReply(page);
  await page.getByRole('button', { name: 'Stop' }).click();
  await expect(page.getByTestId('stop-reason')).toHaveText('Stop reason: aborted');
  const n = await page.locator('.token-row').count();
  expect(n).toBeLessThan(400);
  await expect(page.locator('.msg.assistant .content').last()).not.toBeEmpty();
  await shot(page, '09-stopped');
});

test('a long prompt shows prefill progress, and Stop ends the turn before its first token', async ({ page }) => {
  await open(page);
  await pickFile(page);
  await greedy(page, 16);
  // Several hundred tokens: many 32-token parts, each posted as progress.
  const long = 'The river runs past the mill, the mill turns the stone, the stone grinds the grain. '.repeat(30);
  await page.getByRole('textbox', { name: 'Message' }).fill(long);
  await page.getByRole('button', { name: 'Send' }).click();
  const progress = page.getByTestId('prefill');
  await expect(progress).toContainText(/Reading the prompt: \d+ of \d+ tokens/, { timeout: 60_000 });
  const [, done, total] = (await progress.textContent()).match(/(\d+) of (\d+)/).map(Number);
  expect(total).toBeGreaterThan(500);
  expect(done).toBeLessThan(total);
  await page.getByRole('button', { name: 'Stop' }).click();
  await expect(page.getByTestId('stop-reason')).toHaveText('Stop reason: aborted');
  await expect(progress).toHaveCount(0);
  // Stopped while reading: no token was generated.
  await expect(page.locator('.token-row')).toHaveCount(0);
});
