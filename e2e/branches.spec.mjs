import { test, expect } from '@playwright/test';
import { open, pickFile, greedy, say, assistantMessages, shot } from './helpers.mjs';

// Edit any user message, regenerate any reply, move between a message's branches,
// and continue a cut reply: each reuses the KV cache's common prefix, which the
// prompt view shows. Then the three context policies on a context small enough to
// overflow in a few turns.

const idle = (page) => expect(page.getByRole('button', { name: 'Stop' })).toBeDisabled({ timeout: 300_000 });
const reused = async (page) => Number(await page.getByTestId('prompt-reused').getAttribute('data-reused'));

test('edit, regenerate an older reply, switch branches and continue', async ({ page }) => {
  const errors = await open(page);
  await pickFile(page);
  await greedy(page, 8);
  await say(page, 'Name a colour.');
  await say(page, 'Name a fruit.');
  await expect(page.locator('.msg')).toHaveCount(4);
  const [firstReply, secondReply] = await assistantMessages(page).allTextContents();

  // Regenerate the first (older) reply: what followed it becomes a branch.
  await page.locator('.msg.assistant').first().getByRole('button', { name: 'Regenerate' }).click();
  await idle(page);
  await expect(page.locator('.msg')).toHaveCount(2);
  await expect(page.locator('.msg.assistant').first().getByTestId('branches')).toContainText('2 / 2');
  // Greedy: the same reply again, its prompt (the first message) read from the cache.
  await expect(assistantMessages(page).first()).toHaveText(firstReply);
  expect(await reused(page)).toBeGreaterThan(0);

  // Back to the first branch: the whole earlier exchange is there again.
  await page.locator('.msg.assistant').first().getByRole('button', { name: 'Previous branch' }).click();
  await expect(page.locator('.msg')).toHaveCount(4);
  await expect(page.locator('.msg.assistant').first().getByTestId('branches')).toContainText('1 / 2');
  await expect(assistantMessages(page).nth(1)).toHaveText(secondReply);

  // Edit the second user message: the first exchange's tokens are reused.
  const second = page.locator('.msg.user').nth(1);
  await second.getByRole('button', { name: 'Edit' }).click();
  // Typed key by key: each keystroke must leave the box (its focus, its caret) in place.
  const draft = second.getByRole('textbox', { name: 'Edit message' });
  await draft.click();
  await page.keyboard.press('ControlOrMeta+A');
  await page.keyboard.type('Name a vegetable.', { delay: 20 });
  await expect(draft).toHaveValue('Name a vegetable.');
  await second.getByRole('button', { name: 'Send edit' }).click();
  await idle(page);
  await expect(page.locator('.msg')).toHaveCount(4);
  await expect(page.locator('.msg.user .content').nth(1)).toHaveText('Name a vegetable.');
  await expect(page.locator('.msg.user').nth(1).getByTestId('branches')).toContainText('2 / 2');
  await expect(page.getByTestId('rendered-prompt')).toContainText('Name a colour.');
  const prefix = await reused(page);
  expect(prefix).toBeGreaterThan(10);

  // The reply stopped at 8 tokens: Continue adds to it, the cache reused whole.
  await expect(page.getByTestId('stop-reason')).toContainText('max_tokens');
  const cut = await assistantMessages(page).last().textContent();
  await page.locator('.msg.assistant').last().getByRole('button', { name: 'Continue' }).click();
  await idle(page);
  await expect(page.locator('.msg')).toHaveCount(4);
  const longer = await assistantMessages(page).last().textContent();
  expect(longer.length).toBeGreaterThan(cut.length);
  expect(longer.startsWith(cut.trimEnd())).toBe(true);
  expect(await reused(page)).toBeGreaterThan(prefix);

  // The branches are kept with the chat.
  await expect(page.getByTestId('chat-saved')).toHaveText('Saved in this browser');
  await page.reload();
  await expect(page.getByText('worker ready')).toBeVisible();
  await expect(page.locator('.msg.user').nth(1).getByTestId('branches')).toContainText('2 / 2');
  await page.locator('.msg.user').nth(1).getByRole('button', { name: 'Previous branch' }).click();
  await expect(page.locator('.msg.user .content').nth(1)).toHaveText('Name a fruit.');
  await shot(page, 'branches-1280-light');
  expect(errors).toEqual([]);
});

test('each context policy, on a context that overflows in a few turns', async ({ page }) => {
  const errors = await open(page);
  await pickFile(page);
  await greedy(page, 48);
  await page.getByRole('combobox', { name: 'Context size' }).selectOption('512');
  const long = (topic) => `Topic ${topic}. ` + 'Tell me something about the sea and its waves. '.repeat(14);
  await say(page, long('ALPHA'));
  await say(page, long('BRAVO'));
  await expect(page.locator('.msg.user')).toHaveCount(2);

  // Stop: the turn is refused with the numbers; the chat stays as it was, and usable.
  await page.getByRole('textbox', { name: 'Message' }).fill(long('CHARLIE'));
  await page.getByRole('button', { name: 'Send' }).click();
  await expect(page.getByRole('alert')).toContainText('context policy: stop and explain');
  await expect(page.locator('.msg.user')).toHaveCount(2);
  await expect(page.getByRole('button', { name: 'Send' })).toBeEnabled();

  // Drop the oldest turns: the first exchange is left out, the prompt view says so.
  await page.getByRole('combobox', { name: 'Context policy' }).selectOption('drop_oldest');
  await say(page, long('CHARLIE'));
  await expect(page.locator('.msg.user')).toHaveCount(3);
  await expect(page.getByTestId('prompt-fitted')).toContainText('left out of the prompt (drop the oldest turns');
  await expect(page.getByTestId('rendered-prompt')).not.toContainText('Topic ALPHA');
  await expect(page.getByTestId('rendered-prompt')).toContainText('Topic CHARLIE');
  await expect(page.getByTestId('divergence')).toContainText('the context no longer holds the whole transcript');

  // Truncate the middle: the first exchange stays, the middle goes.
  await page.getByRole('combobox', { name: 'Context policy' }).selectOption('truncate_middle');
  await say(page, long('DELTA'));
  await expect(page.locator('.msg.user')).toHaveCount(4);
  await expect(page.getByTestId('prompt-fitted')).toContainText('drop the middle turns');
  await expect(page.getByTestId('rendered-prompt')).toContainText('Topic ALPHA');
  await expect(page.getByTestId('rendered-prompt')).not.toContainText('Topic BRAVO');
  await expect(page.getByTestId('rendered-prompt')).toContainText('Topic DELTA');
  await shot(page, 'context-policy-1280-light');
  expect(errors).toEqual([]);
});
