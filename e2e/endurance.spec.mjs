// Endurance (issue 21), opt-in: E2E_ENDURANCE=1 (about 10 minutes; not in CI).
// A 300-turn chat with SmolLM2 on a 512-token context with the drop-oldest policy: the
// context overflows again and again. Per turn: the decode rate and the worker's wasm
// memory (from the turn's own record); every 25 turns, after a garbage collection, the
// page's JS heap and DOM node count. The curve goes to E2E_OUT/endurance.json.
// Holds when the worker's memory plateaus (under 1 MB of growth over the last 200 turns), the
// decode rate holds (the last 50 turns' median ≥ 80% of turns 26..75'), and every turn
// ends with a stop reason and no error.
import { test, expect } from '@playwright/test';
import { writeFileSync, mkdirSync } from 'node:fs';
import { open, download, loadCached, greedy } from './helpers.mjs';

const TURNS = Number(process.env.E2E_ENDURANCE_TURNS || 300);
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };

test('300 turns on a small context: memory plateaus, speed holds, nothing leaks', async ({ page }) => {
  test.skip(!process.env.E2E_ENDURANCE, 'opt-in: E2E_ENDURANCE=1');
  test.setTimeout(60 * 60 * 1000);
  await open(page);
  await download(page);
  await page.getByRole('combobox', { name: 'Context size' }).selectOption('512');
  await page.getByRole('combobox', { name: 'Context policy' }).selectOption('drop_oldest');
  await loadCached(page);
  await greedy(page, 24);
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Performance.enable');
  const pageHeap = async () => {
    await cdp.send('HeapProfiler.collectGarbage');
    const { metrics } = await cdp.send('Performance.getMetrics');
    const m = Object.fromEntries(metrics.map((x) => [x.name, x.value]));
    return { jsHeapMB: m.JSHeapUsedSize / 1e6, nodes: m.Nodes };
  };
  const topics = ['a color', 'a fruit', 'a city', 'a number', 'an animal', 'a tool', 'a song', 'a tree'];
  const turns = [];
  const box = page.getByRole('textbox', { name: 'Message' });
  for (let i = 1; i <= TURNS; i++) {
    await box.fill(`Turn ${i}: name ${topics[i % topics.length]} in one word.`);
    await box.press('Enter');
    await expect(page.getByRole('button', { name: 'Stop' })).toBeDisabled({ timeout: 300_000 });
    const reason = await page.getByTestId('stop-reason').textContent();
    const speed = await page.getByTestId('speed').textContent();
    const mem = await page.locator('.turn-stats .memory').textContent();
    const kv = await page.getByTestId('kv-length').textContent();
    const t = {
      turn: i,
      reason: reason.replace('Stop reason: ', ''),
      decode: Number(/decode ([\d.]+) tok\/s/.exec(speed)[1]),
      firstTokenMs: Number(/first token after (\d+) ms/.exec(speed)[1]),
      wasmMB: Number(/([\d.]+) MB/.exec(mem)[1]),
      kv: Number(/KV length (\d+)/.exec(kv)[1]),
    };
    if (i % 25 === 0 || i === 1) Object.assign(t, await pageHeap());
    turns.push(t);
    if (i % 25 === 0) console.log(JSON.stringify(t));
    await expect(page.getByRole('alert')).toHaveCount(0);
  }
  const out = process.env.E2E_OUT || 'results';
  mkdirSync(out, { recursive: true });
  writeFileSync(`${out}/endurance.json`, JSON.stringify(turns, null, 1));
  const band = (a, b) => turns.slice(a - 1, b);
  const summary = [];
  for (let a = 1; a <= TURNS; a += 25) {
    const b = band(a, Math.min(a + 24, TURNS));
    const last = b[b.length - 1];
    summary.push(`turns ${a}-${last.turn}: decode median ${median(b.map((t) => t.decode)).toFixed(1)} tok/s, ` +
      `first token median ${median(b.map((t) => t.firstTokenMs))} ms, wasm ${last.wasmMB} MB` +
      (last.jsHeapMB ? `, page JS heap ${last.jsHeapMB.toFixed(1)} MB, ${last.nodes} DOM nodes` : ''));
  }
  console.log(summary.join('\n'));
  for (const t of turns) expect(t.reason).toMatch(/^(eos_token|stop_token_id|max_tokens|stop_string|loop_detected)$/);
  // The worker's memory (wasm memory only grows): after 100 turns, at most 1 MB more
  // over the rest, the transcript's own growth (about 60 kB of text for 200 turns and
  // the renders of it), not a copy of anything per turn.
  expect(turns[TURNS - 1].wasmMB - turns[Math.min(99, TURNS - 1)].wasmMB).toBeLessThanOrEqual(1);
  const early = median(band(26, 75).map((t) => t.decode));
  const late = median(band(TURNS - 49, TURNS).map((t) => t.decode));
  expect(late).toBeGreaterThanOrEqual(0.8 * early);
});
