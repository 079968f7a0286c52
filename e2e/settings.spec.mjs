import { test, expect } from '@playwright/test';
import { open, pickFile } from './helpers.mjs';

// Settings survive a reload (localStorage), and a new worker is asked for the
// thread count the person chose.
test('settings are kept across a reload, the thread count included', async ({ page }) => {
  await open(page);
  const cores = await page.evaluate(() => navigator.hardwareConcurrency);
  await page.getByRole('textbox', { name: 'System prompt' }).fill('Answer like a pirate.');
  await page.getByRole('textbox', { name: 'System prompt' }).dispatchEvent('change');
  await page.getByRole('combobox', { name: 'Preset' }).selectOption('precise');
  await page.getByRole('combobox', { name: 'Context size' }).selectOption('1024');
  const threads = page.getByRole('combobox', { name: 'Threads' });
  if (cores > 1) {
    await expect(threads).toBeEnabled();
    await threads.selectOption('1');
    await expect(threads).toHaveValue('1');
  }
  await page.locator('details.advanced summary').click();
  const temperature = page.getByRole('spinbutton', { name: 'Temperature' });
  await temperature.fill('0.35');
  await temperature.dispatchEvent('change');

  await page.reload();
  await expect(page.getByText('worker ready')).toBeVisible();
  await expect(page.getByRole('textbox', { name: 'System prompt' })).toHaveValue('Answer like a pirate.');
  // A sampler edit makes the preset "custom"; both come back.
  await expect(page.getByRole('combobox', { name: 'Preset' })).toHaveValue('custom');
  await expect(page.getByRole('combobox', { name: 'Context size' })).toHaveValue('1024');
  await page.locator('details.advanced summary').click();
  await expect(page.getByRole('spinbutton', { name: 'Temperature' })).toHaveValue('0.35');
  // The new worker started with its default and was asked for 1.
  if (cores > 1) await expect(threads).toHaveValue('1');
});

test('a logit bias line that cannot be read is named, and nothing is sent until it is fixed', async ({ page }) => {
  await open(page);
  await pickFile(page);
  await page.locator('details.advanced summary').click();
  const bias = page.getByRole('textbox', { name: 'Logit bias' });
  await bias.fill('2:-100\nnot a bias');
  await bias.dispatchEvent('change');
  await expect(page.getByRole('alert').filter({ hasText: 'logit bias line 2' })).toBeVisible();
  const box = page.getByRole('textbox', { name: 'Message' });
  await box.fill('Hi');
  await page.getByRole('button', { name: 'Send' }).click();
  await expect(page.locator('.error')).toContainText('logit bias line 2');
  await expect(page.locator('.msg.user')).toHaveCount(0);
  await bias.fill('2:-100');
  await bias.dispatchEvent('change');
  await expect(page.locator('details.advanced .invalid')).toHaveCount(0);
  await page.getByRole('button', { name: 'Dismiss' }).click();
  await expect(page.getByRole('alert')).toHaveCount(0);
});
