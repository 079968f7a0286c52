import { test, expect } from '@playwright/test';
import { open, download, catalogEntry, cachedEntry, holdDownloadAt, shot, MODEL_ID } from './helpers.mjs';

const CHUNK = 1 << 20;
const log = async (page) => (await page.request.get('/__test/log')).json();
const dataRequests = async (page) =>
  (await (await page.request.get('/__test/log')).json()).filter((r) => r.range && r.start > 4 << 20);

test('a download cut mid-stream by the server resumes from the last verified chunk', async ({ page }) => {
  await open(page);
  const before = (await log(page)).length;
  await page.request.get('/__test/cut?after=40000000');
  await download(page);
  const data = (await log(page)).slice(before).filter((r) => r.end - r.start > 4 << 20);
  // The request that was cut, then one resuming at a later chunk boundary (not at 0).
  expect(data.length).toBeGreaterThanOrEqual(2);
  const [cut, resumed] = data;
  expect(cut.cut).toBe(true);
  expect(resumed.start).toBeGreaterThan(cut.start);
  expect((resumed.start - cut.start) % CHUNK).toBe(0);
  await expect(page.getByRole('alert')).toHaveCount(0);
  await shot(page, '07-resumed-download');
});

test('a reload mid-download resumes from the stored chunks', async ({ page }) => {
  await open(page);
  await holdDownloadAt(page, 30);
  await catalogEntry(page).getByRole('button', { name: 'Download' }).click();
  const bar = page.getByRole('progressbar', { name: 'Download progress' });
  await expect(bar).toBeVisible();
  await expect.poll(async () => Number(await bar.getAttribute('aria-valuenow')), { timeout: 120_000 })
    .toBeGreaterThan(20);
  await page.reload();
  await expect(page.getByText('worker ready')).toBeVisible();
  const partial = cachedEntry(page);
  await expect(partial.locator('.cached-state')).toContainText('partial');
  const log0 = (await dataRequests(page)).length;
  await partial.getByRole('button', { name: 'Resume' }).click();
  await expect(cachedEntry(page).locator('.cached-state')).toHaveText('verified', { timeout: 300_000 });
  const resumed = (await dataRequests(page)).slice(log0);
  expect(resumed.length).toBeGreaterThanOrEqual(1);
  expect(resumed[0].start).toBeGreaterThan(20_000_000);
  await expect(page.getByRole('alert')).toHaveCount(0);
  void MODEL_ID;
});
