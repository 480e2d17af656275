/**
 * EventStream: the GenerationHandle a caller iterates. The scheduler pushes events as steps
 * complete and ends the stream (or fails it with the request's error); the consumer reads them with
 * `for await`. Leaving the loop early (`return()`) or calling `stopChoice` reaches the scheduler
 * through the callbacks, so the request's batch slots are freed before the next step.
 *
 * Not here: what the events mean (types.ts), producing them (scheduler.ts).
 */
import type { GenerationEvent, GenerationHandle } from './types';

export interface EventStreamHooks {
  /** The consumer stopped reading (return() or break): end the request. */
  onCancel(): void;
  onStopChoice(choice: number): void;
}

export class EventStream implements GenerationHandle {
  private readonly queue: GenerationEvent[] = [];
  private waiting: { resolve: (r: IteratorResult<GenerationEvent>) => void; reject: (e: unknown) => void } | null = null;
  private ended = false;
  private error: unknown = null;
  private cancelled = false;

  constructor(private readonly hooks: EventStreamHooks) {}

  /** The consumer is gone (or the stream ended): nothing more is worth producing. */
  get closed(): boolean {
    return this.cancelled || this.ended;
  }

  push(event: GenerationEvent): void {
    if (this.ended || this.cancelled) return;
    if (this.waiting) {
      const w = this.waiting;
      this.waiting = null;
      w.resolve({ value: event, done: false });
    } else this.queue.push(event);
  }

  /** No more events; the iterator finishes once the queued ones are read. */
  end(): void {
    if (this.ended) return;
    this.ended = true;
    if (this.waiting && this.queue.length === 0) {
      const w = this.waiting;
      this.waiting = null;
      w.resolve({ value: undefined, done: true });
    }
  }

  /** Ends with an error, thrown by the iterator after the queued events. */
  fail(error: unknown): void {
    if (this.ended) return;
    this.error = error ?? new Error('generation failed');
    this.ended = true;
    if (this.waiting && this.queue.length === 0) {
      const w = this.waiting;
      this.waiting = null;
      w.reject(this.error);
    }
  }

  stopChoice(choice: number): void {
    if (!this.closed) this.hooks.onStopChoice(choice);
  }

  [Symbol.asyncIterator](): AsyncIterator<GenerationEvent> {
    return {
      next: () => {
        if (this.queue.length > 0) return Promise.resolve({ value: this.queue.shift()!, done: false });
        if (this.cancelled) return Promise.resolve({ value: undefined, done: true });
        if (this.ended) return this.error ? Promise.reject(this.error) : Promise.resolve({ value: undefined, done: true });
        if (this.waiting) return Promise.reject(new Error('EventStream: next() called while a previous next() is pending'));
        return new Promise((resolve, reject) => {
          this.waiting = { resolve, reject };
        });
      },
      return: () => {
        this.cancel();
        return Promise.resolve({ value: undefined, done: true });
      },
    };
  }

  private cancel(): void {
    if (this.cancelled) return;
    this.cancelled = true;
    this.queue.length = 0;
    if (this.waiting) {
      const w = this.waiting;
      this.waiting = null;
      w.resolve({ value: undefined, done: true });
    }
    if (!this.ended) this.hooks.onCancel();
  }
}
