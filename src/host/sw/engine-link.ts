/**
 * The Service Worker's connection to the engine: the Comlink proxy over the port the hosting
 * tab sent, and which tab (client) that is. When there is no port (first request after the
 * Service Worker restarted, or the host left) it asks every open tab for one and waits a bounded
 * time. Liveness is judged by whether the hosting tab still exists.
 *
 * Not here: forwarding requests (forward.ts).
 */
import * as Comlink from 'comlink';
import { MSG, type EngineApi } from '../wire';

export interface Link {
  api: Comlink.Remote<EngineApi>;
  port: MessagePort;
  /** Id of the hosting tab's Client. */
  clientId: string;
}

export class EngineLink {
  private link: Link | undefined;
  private waiters = new Set<(link: Link) => void>();

  constructor(private readonly scope: ServiceWorkerGlobalScope) {}

  /** A hosting tab sent its port: replaces any previous one and releases waiting requests. */
  accept(port: MessagePort, clientId: string): void {
    // The previous port is not released: requests still in flight on it (same host, new port
    // after a controller change) must get their answers. It is collected once they have.
    this.link = { api: Comlink.wrap<EngineApi>(port), port, clientId };
    for (const w of this.waiters) w(this.link);
    this.waiters.clear();
  }

  /** Drops the link if it is still `link` (its host is gone). */
  drop(link: Link): void {
    if (this.link === link) this.link = undefined;
  }

  /** The current link, after checking its host is alive; otherwise waits up to `timeoutMs` for one. */
  async get(timeoutMs: number): Promise<Link | undefined> {
    if (this.link && (await this.isAlive(this.link))) return this.link;
    if (this.link) this.drop(this.link);
    return new Promise<Link | undefined>((resolve) => {
      const timer = setTimeout(() => {
        this.waiters.delete(done);
        resolve(undefined);
      }, timeoutMs);
      const done = (link: Link) => {
        clearTimeout(timer);
        resolve(link);
      };
      this.waiters.add(done);
      void this.askForPort();
    });
  }

  async isAlive(link: Link): Promise<boolean> {
    return this.hasClient(link.clientId);
  }

  /** Whether the tab (Client) with this id still exists. */
  async hasClient(clientId: string): Promise<boolean> {
    return (await this.scope.clients.get(clientId)) !== undefined;
  }

  private async askForPort(): Promise<void> {
    const tabs = await this.scope.clients.matchAll({ type: 'window', includeUncontrolled: true });
    for (const tab of tabs) tab.postMessage({ type: MSG.portWanted });
  }
}
