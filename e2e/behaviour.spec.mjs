import { test, expect } from '@playwright/test';
import { readFileSync } from 'node:fs';
import { open, pickFile, say, shot, catalogEntry, MODEL_ID, QWEN_ID } from './helpers.mjs';

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
