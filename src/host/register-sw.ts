/**
 * Registering the Service Worker at the root scope. The production build serves it as /sw.js;
 * the Vite dev server serves the TypeScript entry directly (with a Service-Worker-Allowed
 * header, see vite.config.ts), both as module workers.
 */

export const SW_URL = import.meta.env.DEV ? '/workers/service-worker.ts' : '/sw.js';

export async function registerServiceWorker(): Promise<ServiceWorkerRegistration> {
  if (!('serviceWorker' in navigator)) {
    throw new Error('This browser has no Service Workers (or this page is not served from http://127.0.0.1, localhost or https).');
  }
  return navigator.serviceWorker.register(SW_URL, { type: 'module', scope: '/' });
}
