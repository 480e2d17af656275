/**
 * `<hearth-training>`: the Training view. Without a job id: the forms that start SFT and RL jobs
 * and the job list with statuses (newest first, kept fresh while a job is pending or running).
 * With `#/training/<job id>`: that job's page (training-job.ts).
 */
import { LitElement, html, nothing, type PropertyValues } from 'lit';
import { customElement, property } from 'lit/decorators.js';
import { apiGet, type ListPage } from './api-client';
import { formatDuration, formatTime } from './format';
import { Poller } from './poller';
import { shared, statusClass } from './theme';
import type { TrainingJob } from './types';
import './training-forms';
import './training-job';

const active = (j: TrainingJob) => j.status === 'PENDING' || j.status === 'RUNNING';

@customElement('hearth-training')
export class HearthTraining extends LitElement {
  static override styles = shared;

  @property() jobId = '';
  @property() modelId = '';

  private readonly _jobs = new Poller<TrainingJob[]>(this, {
    read: async (signal) => (await apiGet<ListPage<TrainingJob>>('/v1/preview/training-jobs?limit=50', signal)).data,
    live: (jobs) => jobs.some(active),
    intervalMs: 2000,
  });

  protected override updated(changed: PropertyValues<this>): void {
    // Back from a job page: the list may have changed meanwhile.
    if (changed.has('jobId') && changed.get('jobId') && !this.jobId) void this._jobs.refresh();
  }

  private _onStarted(e: CustomEvent<TrainingJob>): void {
    location.hash = `#/training/${e.detail.id}`;
  }

  private _list() {
    const jobs = this._jobs.value;
    return html`<section class="card" aria-labelledby="jobs">
      <div class="spread"><h3 id="jobs">Jobs</h3><button @click=${() => this._jobs.refresh()}>Refresh</button></div>
      ${this._jobs.error ? html`<p class="error" role="alert">Cannot list jobs: ${this._jobs.error}</p>` : nothing}
      ${jobs && jobs.length === 0 ? html`<p class="muted">No training jobs yet.</p>` : nothing}
      ${
        jobs?.length
          ? html`<div class="table-wrap"><table>
            <thead><tr><th>Job</th><th>Kind</th><th>Status</th><th>Created</th><th>Duration</th></tr></thead>
            <tbody>
              ${jobs.map(
                (j) => html`<tr data-job=${j.id}>
                  <td><a href=${`#/training/${j.id}`}><code>${j.id.slice(0, 8)}</code></a></td>
                  <td>${j.kind.toUpperCase()}</td>
                  <td><span class=${statusClass(j.status)}>${j.status}</span></td>
                  <td>${formatTime(j.created_at)}</td>
                  <td>${j.training_start ? formatDuration((j.training_end ? Date.parse(j.training_end) : Date.now()) - Date.parse(j.training_start)) : '—'}</td>
                </tr>`,
              )}
            </tbody>
          </table></div>`
          : nothing
      }
    </section>`;
  }

  override render() {
    if (this.jobId) {
      return html`<h2>Training</h2>
        <p><a href="#/training">← All jobs</a></p>
        <hearth-training-job .jobId=${this.jobId}></hearth-training-job>`;
    }
    return html`<h2>Training</h2>
      <hearth-training-forms .modelId=${this.modelId} @hearth-job-started=${this._onStarted}></hearth-training-forms>
      ${this._list()}`;
  }
}

declare global {
  interface HTMLElementTagNameMap {
    'hearth-training': HearthTraining;
  }
}
