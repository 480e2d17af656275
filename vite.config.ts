// Vite builds three things (DESIGN.md "Layout"): the app (index.html -> src/host/main.ts), the
// engine worker (found through `new Worker(new URL(...))` in src/host/engine-host.ts), and the
// Service Worker, emitted as /sw.js at the root so its scope covers every /v1 path.
import { defineConfig } from 'vite';

export default defineConfig({
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
    headers: { 'Service-Worker-Allowed': '/' },
  },
  preview: {
    headers: { 'Service-Worker-Allowed': '/' },
  },
});
