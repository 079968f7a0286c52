import { test, expect } from '@playwright/test';
import { open, pickFile, greedy, say, shot, assistantMessages, startLongReply } from './helpers.mjs';

test('replies render as Markdown: code blocks copy, raw HTML stays text, Raw shows the exact text', async ({ page, context }) => {
  await context.grantPermissions(['clipboard-read', 'clipboard-write']);
  const errors = await open(page);
  await pickFile(page);
  await greedy(page, 60);
  // SmolLM2, greedy, answers this with a fenced Python block.
  await say(page, 'Write a Python function that adds two numbers.');
  const reply = assistantMessages(page).last();
  const code = reply.locator('pre > code.language-python');
  await expect(code).toContainText('def ');
  // Highlighted: the keyword is a token span; the copy still gives the plain code.
  await expect(code.locator('.tok-keyword').first()).toHaveText('def');
  await reply.getByRole('button', { name: 'Copy code' }).first().click();
  const copied = await page.evaluate(() => navigator.clipboard.readText());
  expect(copied).toBe(await code.first().textContent());
  // Raw: the exact text, fences and all.
  const msg = page.locator('.msg.assistant').last();
  await msg.getByRole('button', { name: 'Raw' }).click();
  await expect(msg.locator('pre.content.raw')).toContainText('```python');
  await msg.getByRole('button', { name: 'Raw' }).click();
  await msg.getByRole('button', { name: 'Copy', exact: true }).click();
  expect(await page.evaluate(() => navigator.clipboard.readText())).toContain('```python');

  // Hostile markup in a message is shown, never run or fetched.
  await page.evaluate(() => { window.__pwned = 0; });
  const hostile = 'Look: <script>window.__pwned = 1</script> and <img src=x onerror="window.__pwned = 2"> and [a link](javascript:window.__pwned=3) and ![pic](https://example.com/p.png)';
  await say(page, hostile);
  const user = page.locator('.msg.user .content').last();
  await expect(user).toContainText('<script>window.__pwned = 1</script>');
  await expect(user).toContainText('<img src=x onerror="window.__pwned = 2">');
  await expect(user.locator('script, img, a')).toHaveCount(0);
  await expect(user).toContainText('[image: pic] https://example.com/p.png');
  await user.click();
  expect(await page.evaluate(() => window.__pwned)).toBe(0);
  expect(errors).toEqual([]);
  await shot(page, '21-markdown');
});

test('Esc stops a reply, and Unload model frees it while the chat stays', async ({ page }) => {
  await open(page);
  await pickFile(page);
  await startLongReply(page);
  await page.keyboard.press('Escape');
  await expect(page.getByTestId('stop-reason')).toHaveText('Stop reason: aborted');
  await page.getByRole('button', { name: 'Unload model' }).click();
  await expect(page.locator('.card')).toHaveCount(0);
  await expect(page.getByText(/Model unloaded/)).toBeVisible();
  await expect(page.locator('.model-line')).toContainText('No model loaded');
  await expect(assistantMessages(page)).toHaveCount(1);
  await expect(page.getByRole('button', { name: 'Send' })).toBeDisabled();
  // A model loads again after it.
  await pickFile(page);
  await say(page, 'Hi');
  await expect(assistantMessages(page).last()).not.toBeEmpty();
});

test('dark and light themes, and the chat at 390 px', async ({ page }) => {
  await page.setViewportSize({ width: 1280, height: 900 });
  await open(page);
  await pickFile(page);
  await greedy(page, 24);
  await say(page, 'Write a Python function that adds two numbers.');
  const bg = () => page.evaluate(() => getComputedStyle(document.documentElement).backgroundColor);
  const theme = page.getByRole('combobox', { name: 'Theme' });
  await theme.selectOption('light');
  const light = await bg();
  await shot(page, '22-light-1280');
  await theme.selectOption('dark');
  await expect(page.locator('html')).toHaveAttribute('data-theme', 'dark');
  const dark = await bg();
  expect(dark).not.toBe(light);
  await shot(page, '23-dark-1280');
  // The choice survives a reload.
  await page.reload();
  await expect(page.getByText('worker ready')).toBeVisible();
  await expect(page.locator('html')).toHaveAttribute('data-theme', 'dark');
  await page.setViewportSize({ width: 390, height: 844 });
  await pickFile(page);
  await shot(page, '24-dark-390');
  await theme.selectOption('system');
  await expect(page.locator('html')).not.toHaveAttribute('data-theme', /.*/);
  await shot(page, '25-system-390');
});

test('installable: a web manifest with an icon; every sampler control says what it does', async ({ page }) => {
  await open(page);
  const href = await page.locator('link[rel=manifest]').getAttribute('href');
  const res = await page.request.get(href);
  expect(res.headers()['content-type']).toContain('application/manifest+json');
  const manifest = await res.json();
  expect(manifest.start_url).toBe('./');
  expect(manifest.display).toBe('standalone');
  const icon = await page.request.get(manifest.icons[0].src);
  expect(icon.ok()).toBe(true);
  await page.locator('details.advanced summary').click();
  for (const name of ['Temperature', 'Top-k', 'Top-p', 'Min-p', 'Typical-p', 'Repetition penalty',
    'Presence penalty', 'Frequency penalty', 'Seed']) {
    const field = page.locator('label.field', { has: page.getByRole('spinbutton', { name, exact: true }) });
    await expect(field.locator('.help')).toHaveText(/turns it off|greedy|same reply/);
  }
});

test("a model's tuning of a preset shows beside the preset and is what it samples with", async ({ page }) => {
  // The default SmolLM2 file carries chat.repetition_penalty=1.1 (scripts/model.sh).
  await open(page);
  await pickFile(page);
  await page.locator('details.advanced summary').click();
  const penalty = page.getByRole('spinbutton', { name: 'Repetition penalty', exact: true });
  const note = page.getByTestId('preset-tuning');
  await expect(note).toHaveText('This model tunes the chat preset: repetition_penalty 1.1 (measured, docs/behaviour.md).');
  await expect(penalty).toHaveValue('1.1');
  const preset = page.getByRole('combobox', { name: 'Preset' });
  await preset.selectOption('precise');
  await expect(note).toHaveCount(0);
  await expect(penalty).toHaveValue('1.05');
  await preset.selectOption('chat');
  await expect(penalty).toHaveValue('1.1');
  await expect(note).toHaveCount(1);
});

test('a reply shows its live rate while it streams, and is announced once when done', async ({ page }) => {
  await open(page);
  await pickFile(page);
  await startLongReply(page, 200, 2);
  await expect(page.getByTestId('live-rate')).toContainText(/Generating: \d+ tokens, [\d.]+ tok\/s/, { timeout: 60_000 });
  await expect(page.getByRole('button', { name: 'Stop' })).toBeDisabled({ timeout: 120_000 });
  await expect(page.getByTestId('live-rate')).toHaveCount(0);
  await expect(page.getByRole('status').filter({ hasText: 'Reply complete' })).toHaveText(/Reply complete: \d+ tokens, stopped by (max_tokens|eos_token)\./);
  await expect(page.getByRole('log', { name: 'Transcript' })).toBeVisible();
});

test('each finished reply keeps its own figures: tokens, rate, first token, stop reason', async ({ page }) => {
  await open(page);
  await pickFile(page);
  await greedy(page, 3);
  await say(page, 'Name a colour.');
  const stats = page.getByTestId('msg-stats');
  await expect(stats).toHaveCount(1);
  const first = await stats.first().textContent();
  // The same figures as the diagnostics' last turn.
  const last = await page.locator('.turn-stats').textContent();
  const generated = Number(last.match(/(\d+) generated/)[1]);
  const reason = (await page.getByTestId('stop-reason').textContent()).replace('Stop reason: ', '');
  expect(first).toMatch(new RegExp(`^${generated} tokens · [\\d.]+ tok/s · first token after \\d+ ms · stopped: ${reason}$`));
  expect(await stats.first().getAttribute('title')).toMatch(/^Prompt \d+ tokens \(\d+ reused, \d+ read at [\d.]+ tok\/s\), SHA-256 [0-9a-f]{64}; model smollm2-135m-instruct\.slm$/);

  // A second reply gets its own line; the first keeps its figures.
  // (The advanced settings are still open from `greedy`.)
  const max = page.getByRole('spinbutton', { name: 'Max new tokens' });
  await max.fill('5');
  await max.dispatchEvent('change');
  await say(page, 'And another one?');
  await expect(stats).toHaveCount(2);
  expect(await stats.first().textContent()).toBe(first);
  const second = Number((await page.locator('.turn-stats').textContent()).match(/(\d+) generated/)[1]);
  await expect(stats.nth(1)).toContainText(`${second} tokens · `);
  // The user's messages carry none.
  await expect(page.locator('.msg.user [data-testid="msg-stats"]')).toHaveCount(0);
});
