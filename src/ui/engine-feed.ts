/**
 * A ReactiveController that follows the engine's status live: it reads the Server-Sent Events
 * feed GET /v1/preview/engine/events while its host element is connected and exposes the latest
 * status. It reconnects after a drop (the engine host changed tabs), with a short pause.
 */
import type { ReactiveController, ReactiveControllerHost } from 'lit';
import type { EngineStatusView } from '../service/engine-status';
import { sseData } from './sse';

export class EngineFeed implements ReactiveController {
  status: EngineStatusView | undefined;
  error: string | undefined;
  private abort: AbortController | undefined;

  constructor(private readonly host: ReactiveControllerHost) {
    host.addController(this);
  }

  hostConnected(): void {
    this.abort = new AbortController();
    void this.follow(this.abort.signal);
  }

  hostDisconnected(): void {
    this.abort?.abort();
  }

  private async follow(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      try {
        await globalThis.hearth.ready();
        const key = await globalThis.hearth.adminKey();
        const res = await fetch('/v1/preview/engine/events', { headers: { Authorization: `Bearer ${key}` }, signal });
        if (!res.ok || !res.body) throw new Error(`The engine status feed answered HTTP ${res.status}.`);
        await this.read(res.body, signal);
        // The feed ended: the engine host went away (its tab closed); say so until it is back.
        if (!signal.aborted) {
          this.error = 'The engine connection closed.';
          this.host.requestUpdate();
        }
      } catch (err) {
        if (signal.aborted) return;
        this.error = (err as Error).message;
        this.host.requestUpdate();
      }
      await new Promise((r) => setTimeout(r, 1000));
    }
  }

  private async read(body: ReadableStream<Uint8Array>, signal: AbortSignal): Promise<void> {
    for await (const data of sseData(body)) {
      if (signal.aborted) return;
      this.status = JSON.parse(data) as EngineStatusView;
      this.error = undefined;
      this.host.requestUpdate();
    }
  }
}
