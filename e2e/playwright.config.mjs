// Real Chromium from Debian, the built app from dist/, the real SmolLM2 model.
// scripts/e2e.sh sets E2E_MODEL (the q8_0 .slm), E2E_CORRUPT (a copy with one byte of
// chunk 3 flipped) and E2E_SLM (the native CLI, for parity), builds dist/ and runs this.
import { defineConfig } from '@playwright/test';

const port = Number(process.env.E2E_PORT || 8123);
const model = process.env.E2E_MODEL;
const corrupt = process.env.E2E_CORRUPT;
const qwen = process.env.E2E_QWEN;
if (!model || !corrupt || !qwen || !process.env.E2E_SLM) {
  throw new Error('run through scripts/e2e.sh (E2E_MODEL, E2E_QWEN, E2E_CORRUPT, E2E_SLM)');
}

export default defineConfig({
  testDir: '.',
  timeout: 10 * 60 * 1000,
  expect: { timeout: 120 * 1000 },
  workers: 1,
  retries: 0,
  reporter: [['list']],
  outputDir: process.env.E2E_OUT || 'results',
  use: {
    baseURL: `http://127.0.0.1:${port}/`,
    launchOptions: {
      executablePath: '/usr/bin/chromium',
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
        '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    },
    screenshot: 'only-on-failure',
    trace: 'off',
  },
  // The app cross-origin isolated (the threaded worker), and on port + 1 without
  // COOP/COEP (one thread).
  webServer: [['', port], ['--no-isolation', port + 1]].map(([flag, p]) => ({
    command: `node ../scripts/serve.mjs --test-hooks ${flag} --root ../dist --port ${p} --slm ${process.env.E2E_SLM} --model ${model}=smollm2-135m-instruct --model ${qwen}=qwen2.5-coder-0.5b-instruct --model ${corrupt}=corrupt-smollm2`,
    url: `http://127.0.0.1:${p}/`,
    reuseExistingServer: false,
    timeout: 60 * 1000,
  })),
});
