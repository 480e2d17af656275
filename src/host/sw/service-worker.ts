/**
 * The Service Worker's behaviour: take control of every page at once, answer every request under
 * /v1/ by forwarding it to the engine, serve the app shell from its cache (offline use, see
 * app-shell.ts), accept engine ports from the hosting tab, and answer pages' control messages
 * (ping, admin key) for `globalThis.hearth`.
 *
 * Not here: anything about HTTP semantics (src/api); everything else passes to the network.
 */
import { MSG, type ControlOp, type ControlReply } from '../wire';
import { AppShell, builtAppShell } from './app-shell';
import { EngineLink } from './engine-link';
import { forward, HOST_WAIT_MS } from './forward';

export function isV1(url: URL, origin: string): boolean {
  return url.origin === origin && (url.pathname === '/v1' || url.pathname.startsWith('/v1/'));
}

export function installServiceWorker(scope: ServiceWorkerGlobalScope): void {
  const links = new EngineLink(scope);
  const built = builtAppShell();
  const shell = built ? new AppShell(built, scope) : null;

  scope.addEventListener('install', (event) => {
    void scope.skipWaiting();
    if (shell) event.waitUntil(shell.install());
  });
  scope.addEventListener('activate', (event) => {
    event.waitUntil(Promise.all([scope.clients.claim(), shell?.activate()]));
  });

  scope.addEventListener('fetch', (event) => {
    const url = new URL(event.request.url);
    if (!isV1(url, scope.location.origin)) {
      // Not the API: the app shell's own files come from its cache (offline), the rest from the network.
      const key = shell?.keyFor(event.request);
      if (shell && key) event.respondWith(shell.respond(event.request, key));
      return;
    }
    // The requesting tab's id lets a non-streaming request be aborted when that tab closes.
    event.respondWith(forward(links, event.request, { clientId: event.clientId, exists: (id) => links.hasClient(id) }));
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
