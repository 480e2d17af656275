/**
 * `globalThis.hearth`: the small handle a page of the app offers to scripts and tests.
 *
 *   await hearth.ready()     resolves once the Service Worker controls this page and the engine
 *                            answers (rejects after `timeoutMs`, default 60 s, with the reason)
 *   await hearth.adminKey()  the admin API key of this browser's Hearth (Bearer token)
 *   hearth.isEngineHost      whether this tab hosts the engine worker
 *
 * Not here: the /v1 API itself, which any page reaches with plain `fetch('/v1/...')`.
 */
import type { EngineHosting } from './engine-host';
import { MSG, type ControlOp, type ControlReply } from './wire';

export interface HearthHandle {
  ready(timeoutMs?: number): Promise<void>;
  adminKey(): Promise<string>;
  readonly isEngineHost: boolean;
}

declare global {
  // eslint-disable-next-line no-var
  var hearth: HearthHandle;
}

async function controller(): Promise<ServiceWorker> {
  if (navigator.serviceWorker.controller) return navigator.serviceWorker.controller;
  return new Promise((resolve) => {
    navigator.serviceWorker.addEventListener('controllerchange', () => resolve(navigator.serviceWorker.controller!), { once: true });
  });
}

async function control(op: ControlOp): Promise<unknown> {
  const sw = await controller();
  const channel = new MessageChannel();
  const reply = new Promise<ControlReply>((resolve) => {
    channel.port1.onmessage = (e) => resolve(e.data as ControlReply);
  });
  sw.postMessage({ type: MSG.control, op, port: channel.port2 }, [channel.port2]);
  const answer = await reply;
  channel.port1.close();
  if (!answer.ok) throw new Error(answer.error);
  return answer.value;
}

export function installPageHandle(hosting: EngineHosting): HearthHandle {
  let readyOnce: Promise<void> | undefined;
  const handle: HearthHandle = {
    ready(timeoutMs = 60_000) {
      readyOnce ??= (async () => {
        const deadline = Date.now() + timeoutMs;
        let lastError = 'the Service Worker has not taken control of this page';
        while (Date.now() < deadline) {
          try {
            await Promise.race([
              control('ping'),
              new Promise((_, reject) => setTimeout(() => reject(new Error(lastError)), Math.max(0, deadline - Date.now()))),
            ]);
            return;
          } catch (err) {
            lastError = (err as Error).message;
            await new Promise((r) => setTimeout(r, 250));
          }
        }
        readyOnce = undefined;
        throw new Error(`Hearth is not ready: ${lastError}`);
      })();
      return readyOnce;
    },
    async adminKey() {
      await handle.ready();
      return (await control('admin-key')) as string;
    },
    get isEngineHost() {
      return hosting.isHost;
    },
  };
  globalThis.hearth = handle;
  return handle;
}
