import { test, expect } from '@playwright/test';
import { open, pickFile, greedy, say } from './helpers.mjs';

// The page reports the time to the first token of each turn. Recorded here (a
// benchmark figure, not a pass/fail bound: timings on a shared machine vary) for a
// short first turn, about 40 prompt tokens with SmolLM2's default system prompt.
test('the page reports the first token time of a short turn', async ({ page }, info) => {
  await open(page);
  await pickFile(page);
  await greedy(page, 4);
  const times = [];
  for (let i = 0; i < 3; i++) {
    await page.getByRole('button', { name: 'Reset context' }).click();
    await say(page, 'What is the capital of France?');
    const speed = await page.getByTestId('speed').textContent();
    const ms = Number(speed.match(/first token after (\d+) ms/)[1]);
    const prompt = Number((await page.locator('.turn-stats').textContent()).match(/Prompt (\d+) tokens/)?.[1] ?? NaN);
    times.push({ ms, prompt });
  }
  for (const t of times) expect(t.ms).toBeGreaterThan(0);
  info.annotations.push({ type: 'first-token-ms', description: JSON.stringify(times) });
  console.log('first token', JSON.stringify(times));
});
