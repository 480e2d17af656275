// Vite builds three things (DESIGN.md "Layout"): the app (index.html -> src/host/main.ts), the
// engine worker (found through `new Worker(new URL(...))` in src/host/engine-host.ts), and the
// Service Worker, emitted as /sw.js at the root so its scope covers every /v1 path.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { defineConfig, type Plugin } from 'vite';

/** Files of public/ that belong to the offline app shell (model weights do not: the engine caches those). */
function shellPublicFiles(publicDir: string): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) {
        if (name !== 'models') walk(path);
      } else out.push(relative(publicDir, path).split('\\').join('/'));
    }
  };
  if (existsSync(publicDir)) walk(publicDir);
  if (existsSync(join(publicDir, 'models/index.json'))) out.push('models/index.json');
  return out;
}

/**
 * Writes the app shell's file list and version into sw.js (src/host/sw/app-shell.ts reads it as
 * `__HEARTH_APP_SHELL__`): every emitted file but sw.js itself, index.html as "/", and the shell's
 * public files. The version hashes their bytes, so each build that changes any of them is a new
 * sw.js, which browsers install as an update.
 */
function appShell(): Plugin {
  let publicDir = '';
  return {
    name: 'hearth-app-shell',
    apply: 'build',
    enforce: 'post',
    configResolved(config) {
      publicDir = config.publicDir;
    },
    generateBundle(_options, bundle) {
      const sw = Object.values(bundle).find((o) => o.type === 'chunk' && o.fileName === 'sw.js');
      if (!sw || sw.type !== 'chunk') return;
      const files = new Map<string, string | Uint8Array>();
      for (const o of Object.values(bundle)) {
        if (o.fileName === 'sw.js' || o.fileName.endsWith('.map')) continue;
        files.set(o.fileName === 'index.html' ? '/' : `/${o.fileName}`, o.type === 'chunk' ? o.code : o.source);
      }
      for (const name of shellPublicFiles(publicDir)) files.set(`/${name}`, readFileSync(join(publicDir, name)));
      const paths = [...files.keys()].sort();
      const hash = createHash('sha256');
      for (const path of paths) hash.update(path).update(files.get(path)!);
      const manifest = { version: hash.digest('hex').slice(0, 16), files: paths };
      sw.code = sw.code.replaceAll('__HEARTH_APP_SHELL__', `(${JSON.stringify(manifest)})`);
    },
  };
}

/** Cross-origin isolation (the same pair as src/host/sw/app-shell.ts ISOLATION_HEADERS). */
const ISOLATION = { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' };

export default defineConfig({
  plugins: [appShell()],
  build: {
    target: 'es2022',
    rollupOptions: {
      input: {
        app: 'index.html',
        sw: 'workers/service-worker.ts',
      },
      output: {
        entryFileNames: (chunk) => (chunk.name === 'sw' ? 'sw.js' : 'assets/[name]-[hash].js'),
      },
    },
  },
  worker: { format: 'es' },
  server: {
    // The dev server serves the Service Worker from /workers/; this lets it control the root.
    // COOP/COEP: cross-origin isolation, for the CPU backend's threads (SharedArrayBuffer; the
    // Service Worker adds the same headers to the app shell it serves, src/host/sw/app-shell.ts).
    headers: { 'Service-Worker-Allowed': '/', ...ISOLATION },
  },
  preview: {
    headers: { 'Service-Worker-Allowed': '/', ...ISOLATION },
  },
});
