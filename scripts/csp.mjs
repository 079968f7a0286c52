// The app's Content-Security-Policy: only its own origin, wasm compilation, and the
// inline module script Trunk writes into index.html (allowed by its SHA-256, so no
// other inline script can run). scripts/build-web.sh puts it in dist/index.html as a
// meta tag; scripts/serve.mjs also sends it as a header (which can add
// frame-ancestors, ignored in a meta tag).
//
//   node scripts/csp.mjs dist/index.html   # adds (or refreshes) the meta tag
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const META = /<meta http-equiv="Content-Security-Policy"[^>]*>\n?/;

export function policy(html, { header = false } = {}) {
  const hashes = [...html.replace(META, '').matchAll(/<script(?![^>]*\bsrc=)[^>]*>([\s\S]*?)<\/script>/g)]
    .map((m) => `'sha256-${createHash('sha256').update(m[1]).digest('base64')}'`);
  return [
    "default-src 'self'",
    `script-src 'self' 'wasm-unsafe-eval' ${hashes.join(' ')}`.trim(),
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data:",
    "connect-src 'self'",
    "worker-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'none'",
    ...(header ? ["frame-ancestors 'none'"] : []),
  ].join('; ');
}

export function withMeta(html) {
  const clean = html.replace(META, '');
  const tag = `<meta http-equiv="Content-Security-Policy" content="${policy(clean)}">\n`;
  return clean.replace(/(<meta charset="utf-8" \/>\n)/, `$1    ${tag}`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const path = process.argv[2] || 'dist/index.html';
  const html = readFileSync(path, 'utf8');
  const out = withMeta(html);
  if (!out.includes('Content-Security-Policy')) throw new Error(`${path}: no <meta charset> to put the policy after`);
  writeFileSync(path, out);
}
