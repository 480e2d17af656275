/**
 * The Service Worker's behaviour: take control of every page at once, answer every request under
 * /v1/ by forwarding it to the engine, accept engine ports from the hosting tab, and answer
 * pages' control messages (ping, admin key) for `globalThis.hearth`.
 *
 * Not here: anything about HTTP semantics (src/api); everything else passes to the network.
 */
import { MSG, type ControlOp, type ControlReply } from '../wire';
import { EngineLink } from './engine-link';
import { forward, HOST_WAIT_MS } from './forward';

export function isV1(url: URL, origin: string): boolean {
  return url.origin === origin && (url.pathname === '/v1' || url.pathname.startsWith('/v1/'));
}

export function installServiceWorker(scope: ServiceWorkerGlobalScope): void {
  const links = new EngineLink(scope);

  scope.addEventListener('install', () => {
    void scope.skipWaiting();
  });
  scope.addEventListener('activate', (event) => {
    event.waitUntil(scope.clients.claim());
  });

  scope.addEventListener('fetch', (event) => {
    const url = new URL(event.request.url);
    if (!isV1(url, scope.location.origin)) return;
    event.respondWith(forward(links, event.request));
  });

  scope.addEventListener('message', (event) => {
    const data = event.data as { type?: string; port?: MessagePort; op?: ControlOp } | null;
    const source = event.source as Client | null;
    if (data?.type === MSG.enginePort && data.port && source) {
      links.accept(data.port, source.id);
    } else if (data?.type === MSG.control && data.port) {
      event.waitUntil(control(links, data.op ?? 'ping', data.port));
    }
  });
}

/** An engine that booted answers a control call in milliseconds; this only bounds a wedged one. */
const CONTROL_TIMEOUT_MS = 15_000;

async function control(links: EngineLink, op: ControlOp, reply: MessagePort): Promise<void> {
  let answer: ControlReply;
  try {
    const link = await links.get(HOST_WAIT_MS);
    if (!link) throw new Error('No Hearth engine host answered.');
    const call = op === 'admin-key' ? link.api.adminKey() : link.api.ping();
    const value = await Promise.race([
      call,
      new Promise<never>((_, reject) => setTimeout(() => reject(new Error('The Hearth engine did not answer.')), CONTROL_TIMEOUT_MS)),
    ]);
    answer = { ok: true, value };
  } catch (err) {
    answer = { ok: false, error: err instanceof Error ? err.message : String(err) };
  }
  reply.postMessage(answer);
  reply.close();
}
