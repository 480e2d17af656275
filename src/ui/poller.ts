/**
 * A ReactiveController that keeps one read fresh while its host is connected: it runs `read`
 * now, then again every `intervalMs` while `live(value)` says the data is still changing (a
 * download in progress, a job running), and on `refresh()`. Failed reads (the engine host moving
 * to another tab) keep the last value, show the error and are retried, so views reconnect by
 * themselves.
 *
 * Not here: what is read (the views pass it), Server-Sent Events (engine-feed.ts).
 */
import type { ReactiveController, ReactiveControllerHost } from 'lit';

export interface PollerOptions<T> {
  read(signal: AbortSignal): Promise<T>;
  /** Whether to read again after `intervalMs` (default: never, until refresh()). */
  live?(value: T): boolean;
  intervalMs?: number;
}

export class Poller<T> implements ReactiveController {
  value: T | undefined;
  error: string | undefined;
  loading = false;
  private abort: AbortController | undefined;
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly host: ReactiveControllerHost,
    private readonly opts: PollerOptions<T>,
  ) {
    host.addController(this);
  }

  hostConnected(): void {
    void this.refresh();
  }

  hostDisconnected(): void {
    this.abort?.abort();
    clearTimeout(this.timer);
  }

  /** Reads now (cancelling a read in flight) and reschedules. */
  async refresh(): Promise<void> {
    this.abort?.abort();
    clearTimeout(this.timer);
    const abort = (this.abort = new AbortController());
    this.loading = true;
    this.host.requestUpdate();
    let again = false;
    try {
      this.value = await this.opts.read(abort.signal);
      this.error = undefined;
      again = this.opts.live?.(this.value) ?? false;
    } catch (err) {
      if (abort.signal.aborted) return;
      this.error = (err as Error).message;
      again = true;
    }
    this.loading = false;
    this.host.requestUpdate();
    if (again && !abort.signal.aborted) this.timer = setTimeout(() => void this.refresh(), this.opts.intervalMs ?? 1000);
  }
}
