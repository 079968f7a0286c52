import { test, expect } from '@playwright/test';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { open, pickFile, say, shot } from './helpers.mjs';

const SEED = 11, MAX = 24;
const QUESTION = 'Name three colors and a fruit.';
// The stages of a creative-preset step, in HF's order (creative runs every filter).
const STAGES = ['raw', 'penalized', 'temperature', 'top_k', 'top_p', 'min_p', 'typical_p'];

/// The record's bytes without its `timings` object: serde's pretty printer puts it on
/// its own lines, so the rest compares byte for byte.
function untimed(text) {
  const out = text.replace(/\n  "timings": \{[^}]*\},/, '');
  expect(out.length).toBeLessThan(text.length);
  return out;
}

async function creative(page) {
  await page.getByRole('combobox', { name: 'Preset' }).selectOption('creative');
  await page.locator('details.advanced summary').click();
  const seed = page.getByRole('spinbutton', { name: 'Seed' });
  await seed.fill(String(SEED));
  await seed.dispatchEvent('change');
  const max = page.getByRole('spinbutton', { name: 'Max new tokens' });
  await max.fill(String(MAX));
  await max.dispatchEvent('change');
}

test('a token row opens to every sampler stage, and the exported trace equals the CLI trace', async ({ page }) => {
  await open(page);
  await pickFile(page);
  await creative(page);
  await say(page, QUESTION);
  const n = Number((await page.getByTestId('token-count').textContent()).match(/(\d+) tokens/)[1]);
  expect(n).toBeGreaterThan(2);

  // Export the turn's record.
  const [dl] = await Promise.all([
    page.waitForEvent('download'),
    page.getByRole('button', { name: 'Export trace' }).click(),
  ]);
  const exported = readFileSync(await dl.path(), 'utf8');
  const trace = JSON.parse(exported);
  expect(trace.sampler.seed).toBe(SEED);
  expect(trace.steps.length).toBeGreaterThanOrEqual(n);

  // Open the third token: every stage is there, as the exported record has it.
  const row = 2;
  await page.locator('.token-row').nth(row).click();
  const stages = page.getByTestId('token-stages');
  await expect(stages).toBeVisible();
  const shown = await stages.locator('li.stage').evaluateAll((els) => els.map((el) => ({
    stage: el.dataset.stage,
    count: Number(el.dataset.count),
    cands: [...el.querySelectorAll('li.cand')].map((c) => ({
      id: Number(c.dataset.id), prob: Number(c.dataset.prob), cut: c.dataset.cut || null,
      pick: c.classList.contains('pick'),
    })),
  })));
  expect(shown.map((s) => s.stage)).toEqual(STAGES);
  const step = trace.steps[row];
  for (const [k, s] of shown.entries()) {
    const want = step.stages[k];
    expect(s.stage).toBe(want.stage);
    expect(s.count).toBe(want.count);
    expect(s.cands.map((c) => c.id)).toEqual(want.top.map((c) => c.id));
    expect(s.cands.map((c) => c.cut)).toEqual(want.top.map((c) => c.cut_by));
    for (const [j, c] of s.cands.entries()) {
      expect(Math.fround(c.prob)).toBe(Math.fround(want.top[j].prob));
      expect(c.pick).toBe(c.id === step.token);
    }
  }
  // The filters only shrink the set, the pick survives to the draw, and the last
  // stage's probability of the pick is the step's.
  const counts = step.stages.slice(2).map((s) => s.count);
  expect([...counts].sort((a, b) => b - a)).toEqual(counts);
  const last = step.stages[step.stages.length - 1];
  expect(last.pick[1]).toBe(step.prob);
  expect(last.top.some((c) => c.id === step.token && c.cut_by === null)).toBe(true);
  await expect(page.getByTestId('stop-check')).toContainText('After this token');
  await expect(stages.locator('h3')).toContainText(`position ${step.position}`);
  await shot(page, '20-token-stages');

  // The CLI, same file, messages, preset, seed and limits: the same record.
  const dir = mkdtempSync(join(tmpdir(), 'slm-trace-'));
  const messages = join(dir, 'messages.json'), out = join(dir, 'trace.json');
  writeFileSync(messages, JSON.stringify([{ role: 'user', content: QUESTION }]));
  execFileSync(process.env.E2E_SLM, ['--json', 'generate', process.env.E2E_MODEL, '--messages', messages,
    '--preset', 'creative', '--seed', String(SEED), '--max-tokens', String(MAX), '--trace', out]);
  const cli = readFileSync(out, 'utf8');
  expect(untimed(exported)).toBe(untimed(cli));
  console.log(`trace: ${trace.steps.length} steps, ${exported.length} bytes, equal to the CLI's once timings are stripped`);
});

test('the prompt view states the tokenizer facts, the card the execution facts', async ({ page }) => {
  await open(page);
  await pickFile(page);
  await page.getByRole('combobox', { name: 'Preset' }).selectOption('json');
  await say(page, 'Hi');
  await page.locator('details.prompt-view summary').click();
  const facts = page.getByTestId('tokenizer-facts');
  // SmolLM2's tokenizer.json: ByteLevel pre-tokenizer, no normalizer, <|im_end|> ends a turn.
  await expect(facts.getByTestId('pre-tokenizer')).toContainText('ByteLevel');
  await expect(facts.getByTestId('normalizer')).toHaveText('none');
  await expect(facts.getByTestId('eos')).toContainText('<|im_end|>');
  await expect(facts.getByTestId('bos-added')).toContainText(/^(yes|no|this model)/);
  await expect(facts.getByTestId('clean-up')).toContainText('not applied');
  const added = facts.getByTestId('added-tokens').locator('tbody tr');
  expect(await added.count()).toBeGreaterThan(2);
  await expect(added.filter({ hasText: '<|im_start|>' })).toContainText('yes');
  await page.getByTestId('execution-facts').locator('summary').click();
  await expect(page.getByTestId('execution-facts')).toContainText('rotate-half');
  await expect(page.getByTestId('kernel-path')).toHaveText(/^simd128 on \d+ threads?$/);
  // The read-ahead the worker chose at load, with a decode step's time in each mode.
  const ahead = page.getByTestId('read-ahead');
  await expect(ahead).toHaveText(
    /^(off|one line per page|every line): a decode step took [\d.]+ ms without it, [\d.]+ ms reading one line per page, [\d.]+ ms reading every line \(measured at load\)$/,
  );
  console.log(`read-ahead: ${await ahead.textContent()}`);
});

test('the console scrolls in its own panel, and the chat is the widest column', async ({ page }) => {
  await page.setViewportSize({ width: 1280, height: 900 });
  await open(page);
  await pickFile(page);
  await page.getByRole('combobox', { name: 'Preset' }).selectOption('json');
  await page.locator('details.advanced summary').click();
  const max = page.getByRole('spinbutton', { name: 'Max new tokens' });
  await max.fill('120');
  await max.dispatchEvent('change');
  await page.getByRole('checkbox', { name: /loop/i }).uncheck();
  await say(page, 'Write a long story about a lighthouse keeper and the sea.');
  const n = Number((await page.getByTestId('token-count').textContent()).match(/(\d+) tokens/)[1]);
  expect(n).toBeGreaterThan(60);
  // Only the rows in view are in the DOM, and the newest is among them.
  const rows = page.locator('.token-row');
  expect(await rows.count()).toBeLessThan(40);
  await expect(rows.filter({ has: page.locator(`span:text-is("${n - 1}")`) })).toBeVisible();
  const height = await page.evaluate(() => document.documentElement.scrollHeight);
  console.log(`page height after ${n} tokens at 1280 px: ${height} px`);
  // With every console row in the page it was 4875 px; the chat column (its settings
  // open, the reply and its figures) sets it now: 1762-2017 px on the machines seen.
  expect(height).toBeLessThan(2400);
  const width = (name) => page.getByRole('region', { name }).evaluate((el) => el.getBoundingClientRect().width);
  const [models, chat, diag] = [await width('Models'), await width('Chat'), await width('Diagnostics panels')];
  expect(chat).toBeGreaterThan(models);
  expect(chat).toBeGreaterThan(diag);
  // Hidden, the diagnostics give their width to the chat, and come back.
  await page.getByRole('button', { name: 'Hide diagnostics' }).click();
  await expect(page.getByRole('region', { name: 'Diagnostics panels' })).toHaveCount(0);
  expect(await width('Chat')).toBeGreaterThan(chat);
  await page.getByRole('button', { name: 'Show diagnostics' }).click();
  await expect(page.getByTestId('token-count')).toBeVisible();
});
