// Offline app shell. Network first (a new build is picked up at once); when the
// network fails, the cached copy. Model bytes never pass through here: they live in
// IndexedDB, verified chunk by chunk, and Range requests are left alone.
//
// Every response it gives is cross-origin isolated (COOP/COEP), so that a static host
// that cannot set those headers still gets the threaded worker once this worker
// controls the page (from the second visit on). And each fresh page prunes the shell
// files that no build references any more (Trunk's hashed names pile up otherwise).
const CACHE = 'tinyrustlm-shell-v1';
// Files the page does not name in its HTML: the workers and what they load.
const FIXED = ['./', './models.json', './worker_loader.js', './worker.js', './worker_bg.wasm',
  './worker_mt_loader.js', './worker_mt.js', './worker_mt_bg.wasm', './pool.js', './sw.js',
  './manifest.webmanifest', './icon.svg'];

// The shell of a build: the fixed files and what its index.html links.
function shellOf(html) {
  const urls = new Set(FIXED);
  for (const m of html.matchAll(/(?:href|src)="([^"]+)"/g)) {
    const u = m[1];
    if (!u.startsWith('data:') && !/^[a-z]+:/i.test(u)) urls.add(u);
  }
  return [...urls].map((u) => new URL(u, self.registration.scope).href);
}

async function precache() {
  const cache = await caches.open(CACHE);
  const page = await fetch('./', { cache: 'no-store' });
  const html = await page.clone().text();
  await cache.put('./', page);
  await Promise.all(shellOf(html).map(async (u) => {
    try {
      const r = await fetch(u, { cache: 'no-store' });
      if (r.ok) await cache.put(u, r);
    } catch (_) { /* cached on first use instead */ }
  }));
}

// Drop cached files that the build in `html` does not use.
async function prune(html) {
  const keep = new Set(shellOf(html));
  const cache = await caches.open(CACHE);
  for (const req of await cache.keys()) {
    const u = new URL(req.url);
    u.search = '';
    if (!keep.has(u.href)) await cache.delete(req);
  }
}

function isolated(res) {
  if (res.type === 'opaque' || res.status === 0) return res;
  const headers = new Headers(res.headers);
  headers.set('Cross-Origin-Opener-Policy', 'same-origin');
  headers.set('Cross-Origin-Embedder-Policy', 'require-corp');
  return new Response(res.body, { status: res.status, statusText: res.statusText, headers });
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
      if (res.ok) {
        const cache = await caches.open(CACHE);
        await cache.put(req, res.clone());
        if (req.mode === 'navigate') e.waitUntil(res.clone().text().then(prune).catch(() => {}));
      }
      return isolated(res);
    } catch (err) {
      const hit = await caches.match(req, { ignoreSearch: true })
        || (req.mode === 'navigate' ? await caches.match('./') : undefined);
      if (hit) return isolated(hit);
      throw err;
    }
  })());
});
