/**
 * BusyAction: one user action at a time for a component (a form's submit, a delete): `busy` while
 * it runs, so the template can disable its buttons, and the failure's message in `error` until the
 * next run starts. The host re-renders on each change (a Lit ReactiveController).
 *
 * Not here: what an action does, reads (those are Tasks).
 * Reference: https://lit.dev/docs/composition/controllers/
 */
import type { ReactiveController, ReactiveControllerHost } from 'lit';

export class BusyAction implements ReactiveController {
  busy = false;
  error = '';

  constructor(private readonly host: ReactiveControllerHost) {
    host.addController(this);
  }

  hostConnected(): void {}

  /** Runs `fn`; never throws: a failure's message lands in `error`. */
  async run(fn: () => Promise<unknown>): Promise<void> {
    this.busy = true;
    this.error = '';
    this.host.requestUpdate();
    try {
      await fn();
    } catch (err) {
      this.error = (err as Error).message;
    } finally {
      this.busy = false;
      this.host.requestUpdate();
    }
  }
}
