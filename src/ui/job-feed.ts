/**
 * A ReactiveController that follows one training job live: the job (status, times) and its
 * events, read the way ART's client reads them (GET /events with `after` = the last event's id),
 * once a second until the job ends. A failed read (the engine host moving to another tab) is
 * retried with a pause, so the view picks up where it was.
 *
 * Not here: drawing (the job view), creating jobs.
 */
import type { ReactiveController, ReactiveControllerHost } from 'lit';
import { apiGet, type ListPage } from './api-client';
import type { JobEvent, TrainingJob } from './types';

export class JobFeed implements ReactiveController {
  job: TrainingJob | undefined;
  events: JobEvent[] = [];
  error: string | undefined;
  private abort: AbortController | undefined;
  private jobId: string | undefined;

  constructor(private readonly host: ReactiveControllerHost) {
    host.addController(this);
  }

  /** Follows another job (or none); the previous feed stops. */
  follow(jobId: string | undefined): void {
    if (jobId === this.jobId) return;
    this.jobId = jobId;
    this.abort?.abort();
    this.job = undefined;
    this.events = [];
    this.error = undefined;
    if (jobId && this.connected) this.start(jobId);
  }

  private connected = false;

  hostConnected(): void {
    this.connected = true;
    if (this.jobId) this.start(this.jobId);
  }

  hostDisconnected(): void {
    this.connected = false;
    this.abort?.abort();
  }

  /** The gradient_step events' data, in order. */
  get steps(): Record<string, number>[] {
    return this.events.filter((e) => e.type === 'gradient_step').map((e) => e.data as Record<string, number>);
  }

  get startedEvent(): JobEvent | undefined {
    return this.events.find((e) => e.type === 'training_started');
  }

  private start(jobId: string): void {
    this.abort = new AbortController();
    void this.run(jobId, this.abort.signal);
  }

  private async run(jobId: string, signal: AbortSignal): Promise<void> {
    const base = `/v1/preview/training-jobs/${encodeURIComponent(jobId)}`;
    while (!signal.aborted) {
      try {
        this.job = await apiGet<TrainingJob>(base, signal);
        for (;;) {
          const after = this.events.at(-1)?.id;
          const page = await apiGet<ListPage<JobEvent>>(`${base}/events?limit=100${after ? `&after=${after}` : ''}`, signal);
          const known = new Set(this.events.map((e) => e.id));
          this.events = [...this.events, ...page.data.filter((e) => !known.has(e.id))];
          if (!page.has_more || page.data.length === 0) break;
        }
        this.error = undefined;
        this.host.requestUpdate();
        if (this.job.status === 'COMPLETED' || this.job.status === 'FAILED') return;
      } catch (err) {
        if (signal.aborted) return;
        this.error = (err as Error).message;
        this.host.requestUpdate();
      }
      await new Promise((r) => setTimeout(r, 1000));
    }
  }
}
