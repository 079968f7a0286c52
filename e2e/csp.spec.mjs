import { test, expect } from '@playwright/test';
import { open, pickFile } from './helpers.mjs';

// The page runs under its Content-Security-Policy (scripts/csp.mjs): its own scripts,
// wasm and workers work; an inline script it did not ship does not run.
test('the page works under its CSP, and a foreign inline script is refused', async ({ page }) => {
  await page.addInitScript(() => {
    window.__violations = [];
    document.addEventListener('securitypolicyviolation', (e) => window.__violations.push(`${e.violatedDirective} ${e.blockedURI}`));
  });
  const response = await page.goto('/');
  const header = response.headers()['content-security-policy'];
  expect(header).toContain("script-src 'self' 'wasm-unsafe-eval' 'sha256-");
  expect(header).toContain("frame-ancestors 'none'");
  await expect(page.locator('meta[http-equiv="Content-Security-Policy"]')).toHaveCount(1);
  const errors = await open(page);
  await pickFile(page);
  const r = await page.evaluate(() => window.tinyrustlm.probe([{ role: 'user', content: 'Hi' }], 2));
  expect(r.greedy.length).toBe(2);
  const ran = await page.evaluate(() => {
    const s = document.createElement('script');
    s.textContent = 'window.__injected = true';
    document.head.appendChild(s);
    return window.__injected === true;
  });
  expect(ran).toBe(false);
  const violations = await page.evaluate(() => window.__violations);
  // One report per policy (the header's and the meta tag's), both for that script.
  expect(violations.length).toBeGreaterThan(0);
  expect(new Set(violations)).toEqual(new Set(['script-src-elem inline']));
  expect(errors).toEqual([]);
});
