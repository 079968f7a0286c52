import { test, expect } from '@playwright/test';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  QWEN_ID, MODEL_ID, open, download, loadCached, greedy, say, shot, assistantMessages, catalogEntry,
  pickFile, memoryWithinPlan,
} from './helpers.mjs';

// Qwen2.5-Coder-0.5B-Instruct Q4_K_M, kept as published (q5_0, q4_k, q6_k, q8_0), from
// the catalog beside SmolLM2: its memory is planned before the download, it downloads
// and verifies, its gate evidence is checked, and it chats.
test('Qwen from the catalog: planned, downloaded, verified, and chatting', async ({ page }) => {
  const errors = await open(page);
  const entry = catalogEntry(page, QWEN_ID);
  await expect(entry.getByTestId('entry-memory')).toContainText('needs');
  await expect(entry.getByTestId('entry-memory')).toContainText('at 2048 positions');
  await download(page, QWEN_ID);
  await loadCached(page, QWEN_ID);
  await expect(page.locator('.card .quality-gate')).toHaveText('reference-verified');
  await expect(page.locator('.card .evidence .verified')).toContainText('top-1 20/20');
  await memoryWithinPlan(page);
  await greedy(page, 24);
  const reason = await say(page, 'Write a Python function that adds two numbers.');
  expect(reason).toMatch(/Stop reason: (eos_token|max_tokens)/);
  await expect(assistantMessages(page).last()).toContainText('def ');
  await shot(page, '05-qwen-chat');
  console.log(`Qwen page speed: ${await page.getByTestId('speed').textContent()}`);
  expect(errors).toEqual([]);
});

// A tool-using chat: the tools the user types as JSON schema go through Qwen's own
// template (the prompt's SHA-256 equals the CLI's rendering of the same messages and
// tools), the model's call comes back as a structured block, and a tool result
// continues the turn through the template's tool role.
test('a tool call through Qwen\'s template, answered with a tool result', async ({ page }) => {
  const errors = await open(page);
  await pickFile(page, process.env.E2E_QWEN);
  const tools = [{ type: 'function', function: { name: 'get_weather', description: 'Get the current weather in a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }];
  await greedy(page, 40);
  await page.getByRole('textbox', { name: 'Tools' }).fill('[not json');
  await expect(page.locator('.settings .invalid')).toContainText('not JSON');
  await page.getByRole('textbox', { name: 'Tools' }).fill(JSON.stringify(tools));
  await expect(page.locator('.settings .invalid')).toHaveCount(0);
  const question = 'What is the weather in Paris right now?';
  await say(page, question);
  const call = page.getByTestId('tool-call');
  await expect(call).toHaveCount(1);
  await expect(call).toHaveAttribute('data-name', 'get_weather');
  await expect(call.locator('.tool-args')).toContainText('"city": "Paris"');

  // The same prompt from the CLI.
  const dir = mkdtempSync(join(tmpdir(), 'slm-tools-'));
  writeFileSync(join(dir, 'm.json'), JSON.stringify([{ role: 'user', content: question }]));
  writeFileSync(join(dir, 't.json'), JSON.stringify(tools));
  const rendered = execFileSync(process.env.E2E_SLM, ['render', process.env.E2E_QWEN,
    '--messages', join(dir, 'm.json'), '--tools', join(dir, 't.json')]);
  const sha = createHash('sha256').update(rendered).digest('hex');
  expect(rendered.toString()).toContain('"name": "get_weather"');
  await expect(page.getByTestId('prompt-sha256')).toContainText(sha);

  await page.getByRole('textbox', { name: 'Tool result' }).fill('{"temperature_c": 18, "sky": "cloudy"}');
  await page.getByRole('button', { name: 'Send tool result' }).click();
  await expect(page.getByRole('button', { name: 'Stop' })).toBeDisabled({ timeout: 300_000 });
  await expect(page.locator('.msg.tool')).toHaveCount(1);
  await expect(page.locator('.msg.assistant')).toHaveCount(2);
  // The call is rendered back with the template's tags, which the model left out.
  await expect(page.getByTestId('divergence')).toBeVisible();
  await shot(page, '06-qwen-tools');
  expect(errors).toEqual([]);
});

// A browser that says it has little memory: the catalog refuses Qwen before any byte
// of it is requested, with the numbers, and still offers SmolLM2.
test('a model that cannot fit is refused before the download, with numbers', async ({ page, baseURL }) => {
  await page.addInitScript(() => {
    Object.defineProperty(Navigator.prototype, 'deviceMemory', { get: () => 0.5 });
  });
  const qwenRequests = async () =>
    (await (await fetch(`${baseURL}__test/log`)).json()).filter((r) => r.path.includes('qwen')).length;
  const before = await qwenRequests();
  await open(page);
  const qwen = catalogEntry(page, QWEN_ID);
  await expect(qwen.locator('.memory-refusal')).toContainText('Too big for this browser');
  await expect(qwen.locator('.memory-refusal')).toContainText('half of this device');
  await expect(qwen.locator('.memory-refusal')).toContainText('KV cache');
  await expect(qwen.getByRole('button', { name: 'Download' })).toBeDisabled();
  await expect(catalogEntry(page, MODEL_ID).locator('.memory-refusal')).toHaveCount(0);
  // A smaller context does not make a 492 MB model fit in 268 MB.
  await page.getByRole('combobox', { name: 'Context size' }).selectOption('512');
  await expect(qwen.locator('.memory-refusal')).toContainText('at 512 positions');
  await qwen.getByRole('button', { name: 'Download' }).click({ force: true });
  expect(await qwenRequests()).toBe(before);
});
