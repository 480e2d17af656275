/**
 * Engine-host election in a page: the tab that holds the Web Lock `hearth-engine` starts the
 * engine worker and hands the Service Worker a port to it (again whenever the Service Worker
 * asks, e.g. after it restarted). The lock is held until the tab closes; then the browser grants
 * it to another open tab, which takes over within moments.
 *
 * Not here: the engine itself (engine-endpoint.ts in the worker), the Service Worker (sw/).
 */
import { MSG } from './wire';

export const ENGINE_LOCK = 'hearth-engine';

export interface EngineHosting {
  /** True while this tab hosts the engine. */
  readonly isHost: boolean;
  /** Resolves when this tab becomes the host (never, if another tab hosts for its whole life). */
  readonly becameHost: Promise<void>;
}

export function startEngineHosting(): EngineHosting {
  let isHost = false;
  let markHost!: () => void;
  const becameHost = new Promise<void>((resolve) => (markHost = resolve));

  void navigator.locks.request(ENGINE_LOCK, async () => {
    const worker = new Worker(new URL('../../workers/engine.worker.ts', import.meta.url), { type: 'module', name: 'hearth-engine' });
    worker.addEventListener('error', (e) => console.error('[hearth] engine worker error:', e.message));
    const handOver = async () => {
      const registration = await navigator.serviceWorker.ready;
      const channel = new MessageChannel();
      worker.postMessage({ type: MSG.connect, port: channel.port1 }, [channel.port1]);
      registration.active?.postMessage({ type: MSG.enginePort, port: channel.port2 }, [channel.port2]);
    };
    navigator.serviceWorker.addEventListener('message', (event) => {
      if (event.data?.type === MSG.portWanted) void handOver();
    });
    // A new Service Worker version took over: it has no port yet.
    navigator.serviceWorker.addEventListener('controllerchange', () => void handOver());
    isHost = true;
    markHost();
    await handOver();
    // Hold the lock for the life of this tab.
    await new Promise<never>(() => {});
  });

  return {
    get isHost() {
      return isHost;
    },
    becameHost,
  };
}
