// Offline app shell. Network first (a new build is picked up at once); when the
// network fails, the cached copy. Model bytes never pass through here: they live in
// IndexedDB, verified chunk by chunk, and Range requests are left alone.
const CACHE = 'tinyrustlm-shell-v1';

async function precache() {
  const cache = await caches.open(CACHE);
  const page = await fetch('./', { cache: 'no-store' });
  const html = await page.clone().text();
  await cache.put('./', page);
  const urls = new Set(['./models.json', './worker_loader.js', './worker.js', './worker_bg.wasm']);
  for (const m of html.matchAll(/(?:href|src)="([^"]+)"/g)) {
    const u = m[1];
    if (!u.startsWith('data:') && !/^[a-z]+:/i.test(u)) urls.add(u);
  }
  await Promise.all([...urls].map(async (u) => {
    try {
      const r = await fetch(u, { cache: 'no-store' });
      if (r.ok) await cache.put(u, r);
    } catch (_) { /* cached on first use instead */ }
  }));
}

self.addEventListener('install', (e) => {
  e.waitUntil(precache().then(() => self.skipWaiting()));
});

self.addEventListener('activate', (e) => {
  e.waitUntil((async () => {
    for (const k of await caches.keys()) if (k !== CACHE) await caches.delete(k);
    await self.clients.claim();
  })());
});

self.addEventListener('fetch', (e) => {
  const req = e.request;
  const url = new URL(req.url);
  if (req.method !== 'GET' || req.headers.has('range') || url.origin !== location.origin
      || url.pathname.endsWith('.slm') || url.pathname.startsWith('/__test/')) return;
  e.respondWith((async () => {
    try {
      const res = await fetch(req);
      if (res.ok) (await caches.open(CACHE)).put(req, res.clone());
      return res;
    } catch (err) {
      const hit = await caches.match(req, { ignoreSearch: true })
        || (req.mode === 'navigate' ? await caches.match('./') : undefined);
      if (hit) return hit;
      throw err;
    }
  })());
});
