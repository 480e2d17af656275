/**
 * `<hearth-training-job>`: one training job followed live (job-feed.ts): status, elapsed and
 * remaining time (from the gradient steps done so far against the count `training_started`
 * announced), charts
 * of loss, policy loss, grad norm, learning rate and tokens/s per gradient step, the failure
 * message, and a link to the checkpoint the job produced.
 *
 * Not here: starting jobs (training-forms.ts).
 */
import { LitElement, css, html, nothing } from 'lit';
import { customElement, property } from 'lit/decorators.js';
import { Task } from '@lit/task';
import { apiGet, type ListPage } from './api-client';
import { formatDuration, formatTime } from './format';
import { JobFeed } from './job-feed';
import type { ChartSeries } from './line-chart';
import { shared, statusClass } from './theme';
import type { Checkpoint, Model } from './types';
import './line-chart';

const CHARTS: [string, string][] = [
  ['loss', 'Loss'],
  ['policy_loss', 'Policy loss'],
  ['grad_norm', 'Grad norm'],
  ['learning_rate', 'Learning rate'],
  ['tokens_per_second', 'Tokens / s'],
];

@customElement('hearth-training-job')
export class HearthTrainingJob extends LitElement {
  static override styles = [
    shared,
    css`
      dl {
        display: grid;
        grid-template-columns: max-content 1fr;
        gap: 0.25rem 1rem;
        margin: 0;
      }
      dt {
        color: var(--hearth-muted);
      }
      dd {
        margin: 0;
      }
    `,
  ];

  @property() jobId = '';
  private readonly _feed = new JobFeed(this);
  private _tick: ReturnType<typeof setInterval> | undefined;

  /** The model and its newest checkpoint, read once the job has ended. */
  private readonly _result = new Task(this, {
    task: async ([modelId, status], { signal }) => {
      if (!modelId || status !== 'COMPLETED') return undefined;
      const id = encodeURIComponent(modelId);
      const [model, cps] = await Promise.all([
        apiGet<Model>(`/v1/preview/models/${id}`, signal),
        apiGet<ListPage<Checkpoint>>(`/v1/preview/models/${id}/checkpoints?order=desc&limit=1`, signal),
      ]);
      return { model, checkpoint: cps.data[0] };
    },
    args: () => [this._feed.job?.model_id, this._feed.job?.status] as const,
  });

  override connectedCallback(): void {
    super.connectedCallback();
    // Elapsed time moves while the job runs, without new events.
    this._tick = setInterval(() => {
      if (this._feed.job?.status === 'RUNNING') this.requestUpdate();
    }, 1000);
  }

  override disconnectedCallback(): void {
    clearInterval(this._tick);
    super.disconnectedCallback();
  }

  protected override willUpdate(): void {
    this._feed.follow(this.jobId || undefined);
  }

  private _times() {
    const job = this._feed.job!;
    const start = job.training_start ? Date.parse(job.training_start) : null;
    const end = job.training_end ? Date.parse(job.training_end) : null;
    const elapsed = start === null ? null : (end ?? Date.now()) - start;
    // training_started's num_sequences is the number of gradient steps the trainer planned.
    const total = Number(this._feed.startedEvent?.data.num_sequences ?? 0);
    const done = this._feed.steps.length;
    let remaining: number | null = null;
    if (end !== null) remaining = 0;
    else if (elapsed !== null && total > 0 && done > 0) remaining = (elapsed / done) * Math.max(0, total - done);
    return { elapsed, remaining, total, done };
  }

  private _charts() {
    const steps = this._feed.steps;
    return CHARTS.filter(([key]) => key === 'loss' || steps.some((s) => key in s)).map(([key, label]) => {
      const series: ChartSeries[] = [
        { label, points: steps.map((s, i) => [i + 1, s[key]] as const).filter(([, v]) => typeof v === 'number') },
      ];
      return html`<hearth-line-chart data-metric=${key} heading=${label} .series=${series} xLabel="gradient step"></hearth-line-chart>`;
    });
  }

  override render() {
    const job = this._feed.job;
    if (!job) {
      return html`<p role="status">${this._feed.error ? html`<span class="error">Cannot read the job: ${this._feed.error}</span>` : 'Loading the job…'}</p>`;
    }
    const t = this._times();
    const failed = this._feed.events.find((e) => e.type === 'training_failed');
    return html`
      <section class="card" aria-label="Job">
        <div class="spread">
          <h3>${job.kind === 'sft' ? 'SFT' : job.kind === 'rl' ? 'RL' : job.kind} job <code>${job.id}</code></h3>
          <span class=${statusClass(job.status)} data-field="job-status" role="status">${job.status}</span>
        </div>
        <dl>
          <dt>Created</dt><dd>${formatTime(job.created_at)}</dd>
          <dt>Elapsed</dt><dd data-field="elapsed">${formatDuration(t.elapsed)}</dd>
          <dt>Remaining</dt><dd data-field="remaining">${job.status === 'PENDING' ? 'waiting for the engine' : formatDuration(t.remaining)}</dd>
          <dt>Gradient steps</dt><dd data-field="steps">${t.done}${t.total ? ` of ${t.total}` : ''}</dd>
        </dl>
        ${job.error_message || failed ? html`<p class="error" role="alert">${job.error_message ?? String(failed?.data.error_message ?? '')}</p>` : nothing}
        ${this._feed.error ? html`<p class="notice">Reconnecting: ${this._feed.error}</p>` : nothing}
        ${
          this._result.value
            ? html`<p data-field="checkpoint">Resulting checkpoint:
              <a href=${`#/models`}>${this._result.value.model.entity}/${this._result.value.model.project}/${this._result.value.model.name}:step${this._result.value.checkpoint?.step ?? '?'}</a>
              · <a href=${`#/runs/${this._result.value.model.id}`}>run history</a></p>`
            : nothing
        }
      </section>
      <div class="charts">${this._charts()}</div>
    `;
  }
}

declare global {
  interface HTMLElementTagNameMap {
    'hearth-training-job': HearthTrainingJob;
  }
}
