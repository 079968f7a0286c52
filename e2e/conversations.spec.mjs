import { test, expect, chromium } from '@playwright/test';
import { mkdtempSync, rmSync, readFileSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  download, loadCached, greedy, say, assistantMessages, pickFile, startLongReply, shot,
} from './helpers.mjs';

// Conversations live in IndexedDB: they survive a reload and a browser restart (a new
// browser on the same profile), a reply cut off by a closed tab comes back marked
// interrupted, and a worker that dies mid-reply is replaced, its stored model loaded
// again and the chat kept.

const port = Number(process.env.E2E_PORT || 8123);
const launch = (dir) => chromium.launchPersistentContext(dir, {
  executablePath: '/usr/bin/chromium',
  baseURL: `http://127.0.0.1:${port}/`,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});

async function openPage(context) {
  const page = context.pages()[0] || await context.newPage();
  await page.goto('/');
  await expect(page.getByText('worker ready')).toBeVisible();
  return page;
}

const chats = (page) => page.getByRole('list', { name: 'Conversations' }).getByRole('listitem');
const openChat = (page) => page.locator('.conv.open .conv-open');

let dir;
test.beforeEach(() => { dir = mkdtempSync(join(tmpdir(), 'slm-profile-')); });
test.afterEach(() => rmSync(dir, { recursive: true, force: true }));

test('chats survive a reload and a browser restart; rename, switch and delete', async () => {
  let context = await launch(dir);
  let page = await openPage(context);
  await download(page);
  await loadCached(page);
  await greedy(page, 8);
  await say(page, 'Name a colour.');
  const colour = await assistantMessages(page).first().textContent();
  expect(colour.length).toBeGreaterThan(0);

  // Rename the first chat, then start a second one. The name is typed key by key into
  // the field, which opens focused with the old name selected: a keystroke (or the
  // autosave after the reply) must not rebuild the field and lose the typing.
  await page.getByRole('button', { name: 'Rename' }).click();
  const name = page.getByRole('textbox', { name: 'Chat name' });
  await expect(name).toBeFocused();
  await page.keyboard.type('Colours', { delay: 30 });
  await expect(name).toHaveValue('Colours');
  await page.getByRole('button', { name: 'Save name' }).click();
  await expect(name).toHaveCount(0);
  await expect(openChat(page)).toHaveText('Colours');
  await page.getByRole('button', { name: 'New chat' }).click();
  await expect(page.locator('.msg')).toHaveCount(0);
  await say(page, 'Name a fruit.');
  await expect(chats(page)).toHaveCount(2);
  await expect(openChat(page)).toHaveText('Name a fruit.');
  const fruit = await assistantMessages(page).first().textContent();
  await expect(page.getByTestId('chat-saved')).toHaveText('Saved in this browser');

  // A reload shows the chat that was open, and reopens the model used last.
  await page.reload();
  await expect(page.getByText('worker ready')).toBeVisible();
  await expect(chats(page)).toHaveCount(2);
  await expect(openChat(page)).toHaveText('Name a fruit.');
  await expect(assistantMessages(page)).toHaveCount(1);
  await expect(assistantMessages(page).first()).toHaveText(fruit);
  await expect(page.locator('.card')).toBeVisible({ timeout: 300_000 });
  // Each reply keeps its record: the prompt's hash and the model.
  await expect(page.getByTestId('msg-stats')).toHaveCount(1);

  // Switch to the renamed chat and go on with it: the session gets its transcript,
  // so the second turn's prompt holds the first exchange.
  await chats(page).filter({ hasText: 'Colours' }).getByRole('button').click();
  await expect(openChat(page)).toHaveText('Colours');
  await expect(assistantMessages(page).first()).toHaveText(colour);
  await say(page, 'And another one?');
  await expect(assistantMessages(page)).toHaveCount(2);
  await expect(page.getByTestId('rendered-prompt')).toContainText('Name a colour.');
  await expect(page.getByTestId('chat-saved')).toHaveText('Saved in this browser');

  // A browser restart on the same profile: both chats, the open one shown.
  await context.close();
  context = await launch(dir);
  page = await openPage(context);
  await expect(chats(page)).toHaveCount(2);
  await expect(openChat(page)).toHaveText('Colours');
  await expect(page.locator('.msg.user')).toHaveCount(2);
  await expect(assistantMessages(page)).toHaveCount(2);
  await shot(page, 'conversations-1280-light');

  // Delete asks first; Keep keeps it, Delete removes it and opens the other chat.
  await page.getByRole('button', { name: 'Delete chat' }).click();
  await page.getByRole('button', { name: 'Keep' }).click();
  await expect(chats(page)).toHaveCount(2);
  await page.getByRole('button', { name: 'Delete chat' }).click();
  await page.getByRole('alertdialog', { name: 'Confirm delete' }).getByRole('button', { name: 'Delete' }).click();
  await expect(chats(page)).toHaveCount(1);
  await expect(openChat(page)).toHaveText('Name a fruit.');
  await page.reload();
  await expect(page.getByText('worker ready')).toBeVisible();
  await expect(chats(page)).toHaveCount(1);
  await context.close();
});

test('a reply cut off by closing the tab comes back marked interrupted, and the chat goes on', async () => {
  const context = await launch(dir);
  let page = await openPage(context);
  await pickFile(page);
  await startLongReply(page, 400, 12);
  // Past the save delay, so that the streamed part is written.
  await page.waitForTimeout(800);
  // The exact text (Raw): Markdown may render a growing reply differently.
  const rawText = async (p) => {
    const m = p.locator('.msg.assistant').first();
    await m.getByRole('button', { name: 'Raw' }).click();
    return m.locator('pre.content.raw').textContent();
  };
  const partial = await rawText(page);
  expect(partial.length).toBeGreaterThan(0);
  await page.close();

  page = await context.newPage();
  await page.goto('/');
  await expect(page.getByText('worker ready')).toBeVisible();
  await expect(page.locator('.msg.user')).toHaveCount(1);
  await expect(page.getByTestId('msg-interrupted')).toHaveCount(1);
  const kept = await rawText(page);
  expect(kept.length).toBeGreaterThan(0);
  expect(partial.startsWith(kept) || kept.startsWith(partial)).toBe(true);
  // The file was not kept, so nothing reopens; load it and go on.
  await pickFile(page);
  await greedy(page, 6);
  await say(page, 'Thanks. Now name a colour.');
  await expect(assistantMessages(page)).toHaveCount(2);
  await expect(page.getByTestId('msg-interrupted')).toHaveCount(1);
  await context.close();
});

test('a worker that dies mid-reply or is terminated is replaced, its stored model loaded again and the chat kept', async ({ page }) => {
  await page.goto('/');
  await expect(page.getByText('worker ready')).toBeVisible();
  await download(page);
  await loadCached(page);
  await greedy(page, 6);
  await say(page, 'Name a colour.');
  // A long reply (the advanced settings are open already), crashed as it streams.
  const max = page.getByRole('spinbutton', { name: 'Max new tokens' });
  await max.fill('400');
  await max.dispatchEvent('change');
  await page.getByRole('textbox', { name: 'Message' }).fill('Write a long story about a lighthouse keeper.');
  await page.getByRole('button', { name: 'Send' }).click();
  await expect(page.locator('.token-row').nth(5)).toBeVisible({ timeout: 120_000 });
  await page.evaluate(() => window.tinyrustlm.crash());
  const error = page.getByRole('alert').filter({ hasText: 'the inference worker failed' });
  await expect(error).toContainText('is being loaded again from this browser\'s storage');
  await expect(page.getByTestId('msg-interrupted')).toHaveCount(1);
  await expect(page.locator('.card')).toBeVisible({ timeout: 300_000 });
  await expect(page.locator('.msg.user')).toHaveCount(2);
  await say(page, 'Name a fruit.');
  await expect(assistantMessages(page)).toHaveCount(3);
  await expect(assistantMessages(page).last()).not.toBeEmpty();
  // Ended from outside (worker.terminate(), as a browser may): the same recovery.
  await page.evaluate(() => window.tinyrustlm.terminate());
  await expect(page.getByRole('alert')).toContainText('it was terminated');
  await expect(page.locator('.card')).toBeVisible({ timeout: 300_000 });
  await say(page, 'Name a tree.');
  await expect(assistantMessages(page)).toHaveCount(4);
  await expect(page.locator('.msg.user')).toHaveCount(4);
});

test('a chat exports as JSON and Markdown, imports into a fresh profile, and its replay bundle reproduces the reply in the CLI', async ({ page, browser }) => {
  await page.goto('/');
  await expect(page.getByText('worker ready')).toBeVisible();
  await pickFile(page);
  // The chat preset samples (seeded): the replay must draw the same tokens. Two
  // turns, so that the second reuses the first's KV cache in the page and is
  // prefilled whole in the CLI.
  await page.locator('details.advanced summary').click();
  const max = page.getByRole('spinbutton', { name: 'Max new tokens' });
  await max.fill('24');
  await max.dispatchEvent('change');
  // The model writes these replies whole (the clarify policy's lead is replayed below).
  await page.getByRole('checkbox', { name: 'Clarify first' }).uncheck();
  await say(page, 'Name a colour.');
  await say(page, 'And a fruit?');
  await expect(assistantMessages(page)).toHaveCount(2);
  const replies = await assistantMessages(page).allTextContents();

  const save = async (name) => {
    const [dl] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name, exact: true }).click()]);
    const path = join(dir, dl.suggestedFilename());
    await dl.saveAs(path);
    return path;
  };
  const json = await save('Export');
  const file = JSON.parse(readFileSync(json, 'utf8'));
  expect(file.format).toBe('tinyrustlm-chat');
  expect(file.conversation.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant']);
  // Each reply keeps its turn record: the prompt's hash, the model, the settings.
  for (const m of file.conversation.messages.filter((m) => m.role === 'assistant')) {
    expect(m.stats.prompt_sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(m.turn.sampler.seed).toBeDefined();
  }
  // The diagnostics column is open, so each turn was traced: "Export with traces"
  // adds each reply's token trace (`slm generate --trace`'s schema) to the same file.
  expect(file.conversation.messages.some((m) => 'trace' in m)).toBe(false);
  const traced = JSON.parse(readFileSync(await save('Export with traces'), 'utf8'));
  expect(traced.conversation.messages.map((m) => m.content)).toEqual(file.conversation.messages.map((m) => m.content));
  for (const m of traced.conversation.messages) {
    if (m.role === 'user') {
      expect(m.trace).toBeUndefined();
      continue;
    }
    expect(m.trace.prompt.rendered_sha256).toBe(m.stats.prompt_sha256);
    expect(m.trace.stop_reason).toBe(m.stats.stop_reason);
    // One step per generated token (and one more for an end-of-sequence token).
    expect(m.trace.steps.length - m.stats.generated).toBeGreaterThanOrEqual(0);
    expect(m.trace.steps.length - m.stats.generated).toBeLessThanOrEqual(1);
    expect(m.trace.steps[0].stages.length).toBeGreaterThan(0);
  }
  const md = readFileSync(await save('Export Markdown'), 'utf8');
  expect(md).toContain('**User:**\n\nName a colour.');
  expect(md).toContain('**Assistant:**');

  const bundle = await save('Export for replay');
  const out = JSON.parse(execFileSync(process.env.E2E_SLM,
    ['--json', 'generate', process.env.E2E_MODEL, '--replay', bundle]));
  expect(out.text).toBe(file.conversation.messages[3].content);
  expect(out.same).toBe(true);

  // A fresh profile: Import makes it a chat of its own, identical.
  const other = await browser.newContext();
  const fresh = await other.newPage();
  await fresh.goto('/');
  await expect(fresh.getByText('worker ready')).toBeVisible();
  await fresh.getByLabel('Import', { exact: true }).setInputFiles(json);
  await expect(fresh.locator('.msg.user')).toHaveCount(2);
  expect(await assistantMessages(fresh).allTextContents()).toEqual(replies);
  await expect(fresh.getByTestId('msg-stats')).toHaveCount(2);
  await expect(chats(fresh)).toHaveCount(1);
  // A file that is not an exported chat is refused, by name.
  const bad = join(dir, 'not-a-chat.json');
  writeFileSync(bad, JSON.stringify({ format: 'something-else' }));
  await fresh.getByLabel('Import', { exact: true }).setInputFiles(bad);
  await expect(fresh.getByRole('alert')).toContainText('not-a-chat.json was not imported: the file\'s format is "something-else"');
  await expect(chats(fresh)).toHaveCount(1);
  await other.close();

  // A reply the clarify policy started: the bundle carries the lead, the CLI continues
  // it, and the expected text is what the model wrote after it.
  await page.getByRole('checkbox', { name: 'Clarify first' }).check();
  await say(page, 'Translate this sentence.');
  await expect(assistantMessages(page)).toHaveCount(3);
  const lead = await page.getByTestId('policy-lead').last().textContent();
  const ledBundle = await save('Export for replay');
  const led = JSON.parse(readFileSync(ledBundle, 'utf8'));
  expect(lead).toContain(led.lead);
  const ledOut = JSON.parse(execFileSync(process.env.E2E_SLM,
    ['--json', 'generate', process.env.E2E_MODEL, '--replay', ledBundle]));
  const ledChat = JSON.parse(readFileSync(await save('Export'), 'utf8'));
  expect(led.lead.length).toBeGreaterThan(0);
  expect(led.lead + ledOut.text).toBe(ledChat.conversation.messages[5].content);
  expect(ledOut.same).toBe(true);
});

test('a chat made with another model says so, and goes on with the model loaded now', async ({ page }) => {
  await page.goto('/');
  await expect(page.getByText('worker ready')).toBeVisible();
  await pickFile(page);
  await greedy(page, 8);
  await say(page, 'What is red?');
  const note = page.getByTestId('chat-model');
  await expect(note).toHaveCount(0); // made with the model that is loaded
  await pickFile(page, process.env.E2E_QWEN);
  await expect(page.locator('.card')).toContainText('Qwen');
  await expect(note).toContainText(/This chat was made with smollm2.*; qwen.* is loaded now and continues it\./i);
  await expect(page.locator('.msg.user')).toHaveCount(1);
  await say(page, 'And blue?');
  await expect(page.locator('.msg.assistant')).toHaveCount(2);
});

test('a chat write that fails for quota is named in plain words, keeps what was saved, and the next write catches up', async () => {
  let context = await launch(dir);
  let page = await openPage(context);
  await pickFile(page);
  await greedy(page, 8);
  await say(page, 'Name a colour.');
  const saved = (page) => page.getByTestId('chat-saved');
  await expect(saved(page)).toHaveText('Saved in this browser');
  await context.close();

  // Chromium enforces an overridden quota, but reads an origin's quota once, at its
  // first use of storage: so the override is set before the page opens. At one byte,
  // every write of the chat fails with QuotaExceededError.
  context = await launch(dir);
  page = await context.newPage();
  const cdp = await context.newCDPSession(page);
  const origin = `http://127.0.0.1:${port}`;
  await cdp.send('Storage.overrideQuotaForOrigin', { origin, quotaSize: 1 });
  await page.goto('/');
  await expect(page.getByText('worker ready')).toBeVisible();
  await expect(page.locator('.msg.user .content')).toHaveText(['Name a colour.']);
  await pickFile(page);
  await greedy(page, 8);
  await say(page, 'And a fruit?');
  const alert = page.getByRole('alert');
  await expect(alert).toContainText('could not be saved');
  await expect(alert).toContainText('QuotaExceededError');
  await expect(alert).toContainText('it stays on this page, and what was saved before is kept');
  await expect(saved(page)).toHaveText('Not saved');
  // The chat goes on on the page meanwhile.
  await expect(assistantMessages(page)).toHaveCount(2);
  const fruit = await assistantMessages(page).nth(1).textContent();
  await say(page, 'And a tree?');
  await expect(assistantMessages(page)).toHaveCount(3);
  await expect(saved(page)).toHaveText('Not saved');
  await context.close();

  // What was saved before is intact; with room again, the chat goes on and is saved.
  context = await launch(dir);
  page = await openPage(context);
  await expect(page.locator('.msg.user .content')).toHaveText(['Name a colour.']);
  await expect(assistantMessages(page)).toHaveCount(1);
  await pickFile(page);
  await greedy(page, 8);
  await say(page, 'And a fruit?');
  await expect(saved(page)).toHaveText('Saved in this browser');
  await expect(assistantMessages(page).nth(1)).toHaveText(fruit);
  await context.close();
});
