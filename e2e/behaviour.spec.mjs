import { test, expect } from '@playwright/test';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { open, pickFile, say, shot, greedy, catalogEntry, MODEL_ID, QWEN_ID } from './helpers.mjs';

// The probe the catalog's SmolLM2 conversion carries (scripts/model.sh converts with it).
const probe = JSON.parse(readFileSync(new URL('../eval/clarify_probe/smollm2-135m-instruct.json', import.meta.url), 'utf8'));

// The clarify-first policy in the page: on by default with the chat preset, its
// decision and the exact note shown under the user's message and in the rendered
// prompt, the reply started with the policy's lead, silent on a clear message, off
// when unticked.
test('Clarify first: an underspecified message gets a visible note, a clear one does not', async ({ page }) => {
  const errors = await open(page);
  const box = page.getByRole('checkbox', { name: 'Clarify first' });
  await expect(box).toBeChecked();
  // Other presets turn it off, the chat preset back on.
  await page.getByRole('combobox', { name: 'Preset' }).selectOption('json');
  await expect(box).not.toBeChecked();
  await page.getByRole('combobox', { name: 'Preset' }).selectOption('chat');
  await expect(box).toBeChecked();
  await pickFile(page);
  // The loaded file is the published one (same hash): its card states the gate.
  await expect(page.getByTestId('card-behaviour')).toContainText('Behaviour gate: fails.');

  await say(page, 'Translate this sentence.');
  const policy = page.getByTestId('msg-policy').last();
  await expect(policy).toHaveAttribute('data-clarify', 'true');
  await expect(policy).toContainText('asked for the sentence to translate and the language to translate into');
  await policy.locator('summary').click();
  const note = policy.locator('.policy-note');
  await expect(note).toContainText('[Clarify first: my request does not say the sentence to translate');
  // The model was given exactly that: the rendered prompt holds the note.
  await expect(page.getByTestId('rendered-prompt')).toContainText(await note.textContent());
  // The question comes from the model; the reply is not the note.
  await expect(page.locator('.msg.assistant .content').last()).not.toContainText('[Clarify first');
  // The policy starts the reply with a lead that names no piece (the text is missing,
  // so it asks for it to be pasted), and says so; the prompt ends with it, and the
  // model wrote the rest.
  await expect(policy.getByTestId('policy-lead')).toContainText('“Could you paste”');
  await expect(page.locator('.msg.assistant .content').last()).toHaveText(/^Could you paste\s*\S/);
  expect((await page.getByTestId('rendered-prompt').textContent())
    .endsWith('<|im_start|>assistant\nCould you paste')).toBe(true);

  await say(page, 'What is the capital of France?');
  await expect(page.getByTestId('msg-policy').last()).toHaveAttribute('data-clarify', 'false');
  // The model carries a clarify probe (scripts/model.sh): its reading is shown with the
  // decision, here under its threshold.
  await expect(page.getByTestId('msg-policy').last()).toContainText(new RegExp(
    `the clarify probe's margin at layer ${probe.layer} is -?\\d+\\.\\d\\d \\(threshold ${probe.threshold.toFixed(2)}\\)`));
  await expect(page.getByTestId('rendered-prompt')).not.toContainText('What is the capital of France?\n\n[Clarify first');

  await box.uncheck();
  const before = await page.getByTestId('msg-policy').count();
  await say(page, 'Translate this sentence.');
  await expect(page.getByTestId('msg-policy')).toHaveCount(before);
  // The whole transcript is rendered: only the first message carries a note.
  const rendered = await page.getByTestId('rendered-prompt').textContent();
  expect(rendered.split('[Clarify first').length - 1).toBe(1);
  expect(rendered.trimEnd().endsWith('Translate this sentence.<|im_end|>\n<|im_start|>assistant')).toBe(true);
  expect(errors).toEqual([]);
  await shot(page, '30-clarify-first');
});

// A clarifying reply whose question names no missing piece is set aside and tried
// again with the next lead (`Session::settle`). SmolLM2 under the chat preset (seed 0)
// answers "Why is he so famous?" six ways without asking who "he" is, and none asks
// amiss, so the page shows six attempts and keeps the first, with its prompt.
test('Clarify first: a question that names no missing piece is tried again with another lead', async ({ page }) => {
  const errors = await open(page);
  await pickFile(page);
  await say(page, 'Why is he so famous?');
  const policy = page.getByTestId('msg-policy').last();
  const tries = policy.getByTestId('policy-tries');
  await expect(tries).toContainText('6 attempts');
  const items = tries.locator('li');
  await expect(items).toHaveCount(6);
  const leads = ['To help with that, I need to know', 'To answer that, I need to know',
    'First, could you tell me', 'Could you tell me', 'To do that, please tell me',
    'So that I can help, please tell me'];
  for (let i = 0; i < 6; i++) {
    await expect(items.nth(i)).toHaveAttribute('data-named', 'false');
    await expect(items.nth(i)).toHaveAttribute('data-amiss', 'false');
    await expect(items.nth(i)).toHaveAttribute('data-kept', i === 0 ? 'true' : 'false');
    expect((await items.nth(i).textContent()).startsWith(leads[i])).toBe(true);
  }
  // The reply shown is the kept first attempt, and the prompt shown is its prompt.
  const reply = (await page.locator('.msg.assistant .content').last().textContent()).trim();
  expect(reply.startsWith(leads[0])).toBe(true);
  expect((await items.nth(0).textContent()).startsWith(reply)).toBe(true);
  await expect(policy.getByTestId('policy-lead')).toContainText(`“${leads[0]}”`);
  expect((await page.getByTestId('rendered-prompt').textContent())
    .endsWith(`<|im_start|>assistant\n${leads[0]}`)).toBe(true);
  // The next turn goes on from the kept reply, with no divergence.
  await say(page, 'My uncle Tom, the baker.');
  await expect(page.getByTestId('divergence')).toHaveCount(0);
  expect(errors).toEqual([]);
  await shot(page, '31-clarify-tries');
});

// Qwen, greedy, restates "How do I read a file line by line in Go?" as its own
// question (the CLI's a_reply_that_restates_a_clear_question_is_tried_again pins it).
// With Clarify first on and silent, the page sets that reply aside and tries again,
// barred from its first token; the replay bundle carries the bar, and the CLI
// replays the kept reply byte for byte.
test('Clarify first: a reply that restates a clear question is tried again', async ({ page }) => {
  const errors = await open(page);
  await pickFile(page, process.env.E2E_QWEN);
  await greedy(page, 24);
  await page.getByRole('checkbox', { name: 'Clarify first' }).check();
  await say(page, 'How do I read a file line by line in Go?');
  const policy = page.getByTestId('msg-policy').last();
  await expect(policy).toHaveAttribute('data-clarify', 'false');
  const tries = policy.getByTestId('policy-tries');
  await expect(tries).toContainText('2 attempts: a reply that restated the question was tried again');
  const items = tries.locator('li');
  await expect(items).toHaveCount(2);
  await expect(items.nth(0)).toHaveAttribute('data-restates', 'true');
  await expect(items.nth(0)).toHaveAttribute('data-kept', 'false');
  await expect(items.nth(0)).toContainText('How can I read a file line by line in Go?');
  await expect(items.nth(1)).toHaveAttribute('data-restates', 'false');
  await expect(items.nth(1)).toHaveAttribute('data-kept', 'true');
  // No lead: the model's own words, only not starting as the restated reply did.
  await expect(policy.getByTestId('policy-lead')).toHaveCount(0);
  // The reply shown is the kept attempt (rendered: its backticks become code).
  const kept = await items.nth(1).textContent();
  expect(kept.startsWith('How')).toBe(false);
  const reply = (await page.locator('.msg.assistant .content').last().textContent()).trim();
  expect(kept.replace(/`/g, '').startsWith(reply)).toBe(true);
  // The set-aside attempt is no divergence of the transcript's.
  await expect(page.getByTestId('divergence')).toHaveCount(0);

  const [dl] = await Promise.all([page.waitForEvent('download'),
    page.getByRole('button', { name: 'Export for replay', exact: true }).click()]);
  const bundle = join(mkdtempSync(join(tmpdir(), 'slm-restated-')), dl.suggestedFilename());
  await dl.saveAs(bundle);
  expect(JSON.parse(readFileSync(bundle, 'utf8')).barred_start.length).toBe(1);
  const out = JSON.parse(execFileSync(process.env.E2E_SLM,
    ['--json', 'generate', process.env.E2E_QWEN, '--replay', bundle]));
  expect(kept.startsWith(out.text)).toBe(true);
  expect(out.same).toBe(true);
  expect(errors).toEqual([]);
});

test('each catalog model card states its behaviour gate', async ({ page }) => {
  await open(page);
  for (const id of [MODEL_ID, QWEN_ID]) {
    const gate = catalogEntry(page, id).getByTestId('entry-behaviour');
    await expect(gate).toContainText('Behaviour gate:');
    // The figures come from docs/behaviour.md's runs; a card that fails says which goal.
    if ((await gate.getAttribute('data-passes')) === 'false') {
      await expect(gate).toContainText('(goal');
    }
  }
});
