import { expect } from '@playwright/test';
import { mkdirSync } from 'node:fs';

export const MODEL_ID = 'smollm2-135m-instruct';
export const QWEN_ID = 'qwen2.5-coder-0.5b-instruct';
const shots = process.env.E2E_SCREENSHOTS || 'screenshots';

export async function shot(page, name) {
  mkdirSync(shots, { recursive: true });
  await page.screenshot({ path: `${shots}/${name}.png`, fullPage: true });
}

export async function open(page) {
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto('/');
  await expect(page.getByText('worker ready')).toBeVisible();
  return errors;
}

export function catalogEntry(page, id = MODEL_ID) {
  return page.locator(`.catalog-entry[data-id="${id}"]`);
}

export function cachedEntry(page, id = MODEL_ID) {
  return page.locator(`.cached-model[data-id="${id}"]`);
}

/// Download a catalog model (the default one unless named) and wait until it is verified.
export async function download(page, id = MODEL_ID) {
  await catalogEntry(page, id).getByRole('button', { name: 'Download' }).click();
  await expect(page.getByRole('progressbar', { name: 'Download progress' })).toBeVisible();
  await expect(cachedEntry(page, id).locator('.cached-state')).toHaveText('verified', { timeout: 300_000 });
}

/// Hold the next download of catalog entry `id` once it passes `percent` of its file:
/// the server stalls that response (scripts/serve.mjs's stall hook), so that a test
/// acting "mid-download" never races a fast local download to its end. The worker
/// gives a stalled connection up after 15 s and resumes.
export async function holdDownloadAt(page, percent, id = MODEL_ID) {
  const entry = (await (await page.request.get('/models.json')).json()).find((m) => m.id === id);
  await page.request.get(`/__test/stall?after=${Math.round(entry.size * percent / 100)}`);
}

export async function loadCached(page, id = MODEL_ID) {
  await cachedEntry(page, id).getByRole('button', { name: 'Load' }).click();
  await expect(page.locator('.card')).toBeVisible({ timeout: 300_000 });
}

/// The card's planned and measured memory (bytes), checked to agree within 10%.
export async function memoryWithinPlan(page) {
  const el = page.getByTestId('memory-plan');
  const planned = Number(await el.getAttribute('data-planned'));
  const measured = Number(await el.getAttribute('data-measured'));
  console.log(`memory: planned ${(planned / 1e6).toFixed(1)} MB, measured ${(measured / 1e6).toFixed(1)} MB (${((measured / planned - 1) * 100).toFixed(1)}%)`);
  expect(planned).toBeGreaterThan(0);
  expect(Math.abs(measured / planned - 1)).toBeLessThanOrEqual(0.10);
  return { planned, measured };
}

/// Greedy and short, so that runs are deterministic and quick.
export async function greedy(page, maxTokens = 12) {
  await page.getByRole('combobox', { name: 'Preset' }).selectOption('json');
  await page.locator('details.advanced summary').click();
  const max = page.getByRole('spinbutton', { name: 'Max new tokens' });
  await max.fill(String(maxTokens));
  await max.dispatchEvent('change');
}

/// Start a long greedy reply and wait until `tokens` of it have streamed; the turn
/// goes on (up to `maxTokens`).
export async function startLongReply(page, maxTokens = 400, tokens = 4) {
  await greedy(page, maxTokens);
  const box = page.getByRole('textbox', { name: 'Message' });
  await box.fill('Write a long story about a lighthouse keeper.');
  await page.getByRole('button', { name: 'Send' }).click();
  await expect(page.locator('.token-row').nth(tokens - 1)).toBeVisible({ timeout: 120_000 });
}

/// Send a message and wait for the turn to finish; returns the stop reason text.
export async function say(page, text) {
  const box = page.getByRole('textbox', { name: 'Message' });
  await box.fill(text);
  await box.press('Enter');
  await expect(page.getByRole('button', { name: 'Stop' })).toBeDisabled({ timeout: 300_000 });
  const reason = await page.getByTestId('stop-reason').textContent();
  return reason;
}

export function assistantMessages(page) {
  return page.locator('.msg.assistant .content');
}

/// Load the model with the file picker (the path Playwright hands to Chromium).
export async function pickFile(page, path = process.env.E2E_MODEL) {
  await page.getByLabel('Choose a .slm file').setInputFiles(path);
  await expect(page.locator('.card')).toBeVisible({ timeout: 300_000 });
}

/// Drop a file on the drop zone: the bytes come from the test server, the File and
/// the DataTransfer are built in the page, and real drag events are dispatched.
export async function dropFile(page, catalogId, name) {
  await page.evaluate(async ([id, name]) => {
    const catalog = await (await fetch('models.json')).json();
    const entry = catalog.find((e) => e.id === id);
    const blob = await (await fetch(entry.url)).blob();
    const dt = new DataTransfer();
    dt.items.add(new File([blob], name));
    const zone = document.querySelector('[data-testid=drop-zone]');
    for (const type of ['dragenter', 'dragover', 'drop']) {
      zone.dispatchEvent(new DragEvent(type, { dataTransfer: dt, bubbles: true, cancelable: true }));
    }
  }, [catalogId, name]);
}
