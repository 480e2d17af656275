/**
 * `<hearth-runs>`: the Runs view. Pick a model (or `#/runs/<model id>`): its metrics history by
 * step and split as charts (reward, reward std dev, exception rate, then every other logged
 * metric), and its logged trajectory groups, filtered by split and step, rendered as
 * conversations (trajectory-view.ts) with rewards and metrics.
 *
 * While the view is open it re-reads the run every few seconds (a model being trained or logged
 * to keeps its charts current), and the trajectory page when the run's history grew; the last
 * values stay drawn during a re-read, so charts do not flicker.
 *
 * Not here: the chart drawing (line-chart.ts), logging (clients do, through POST /log).
 */
import { LitElement, css, html, nothing } from 'lit';
import { customElement, property, state } from 'lit/decorators.js';
import { Task } from '@lit/task';
import { apiGet, apiGetAll, type ListPage } from './api-client';
import { formatMetric, formatTime } from './format';
import { runCharts } from './chart-data';
import { shared } from './theme';
import type { LoggedGroup, Model, RunRecord } from './types';
import './line-chart';
import './trajectory-view';

const PAGE = 10;
/** How often an open Runs view re-reads the run record. */
const LIVE_MS = 4000;

@customElement('hearth-runs')
export class HearthRuns extends LitElement {
  static override styles = [
    shared,
    css`
      .group {
        border-top: 1px solid var(--hearth-border);
        padding-top: 0.6rem;
        margin-top: 0.6rem;
      }
    `,
  ];

  @property() modelId = '';
  @state() private _split = '';
  @state() private _step = '';
  @state() private _cursor: string[] = [];

  private readonly _models = new Task(this, {
    task: async (_a, { signal }) => apiGetAll<Model>('/v1/preview/models?order=desc', signal),
    args: () => [],
  });

  private get _model(): string {
    return this.modelId || this._models.value?.[0]?.id || '';
  }

  private readonly _run = new Task(this, {
    task: async ([id], { signal }) => (id ? apiGet<RunRecord>(`/v1/preview/models/${encodeURIComponent(id)}/run`, signal) : undefined),
    args: () => [this._model] as const,
  });

  private readonly _groups = new Task(this, {
    task: async ([id, split, step, after], { signal }) => {
      if (!id) return undefined;
      const q = new URLSearchParams({ limit: String(PAGE) });
      if (split) q.set('split', split);
      if (step) q.set('step', step);
      if (after) q.set('after', after);
      return apiGet<ListPage<LoggedGroup>>(`/v1/preview/models/${encodeURIComponent(id)}/trajectories?${q}`, signal);
    },
    args: () => [this._model, this._split, this._step, this._cursor.at(-1) ?? ''] as const,
  });

  private _timer: ReturnType<typeof setInterval> | undefined;
  /** The trajectory query a live re-read is refreshing (null when none is): only that one keeps its page drawn. */
  private _liveQuery: string | null = null;

  private get _groupsQuery(): string {
    return JSON.stringify([this._model, this._split, this._step, this._cursor.at(-1) ?? '']);
  }

  override connectedCallback(): void {
    super.connectedCallback();
    this._timer = setInterval(() => void this._live(), LIVE_MS);
  }

  override disconnectedCallback(): void {
    super.disconnectedCallback();
    clearInterval(this._timer);
  }

  /** One live re-read: the run always (cheap), the trajectory page only when history grew. */
  private async _live(): Promise<void> {
    if (document.hidden || !this._model) return;
    const before = this._run.value?.history.length;
    await this._run.run();
    if (this._run.value?.history.length === before) return;
    this._liveQuery = this._groupsQuery;
    await this._groups.run();
    this._liveQuery = null;
  }

  private _refresh(): void {
    void this._run.run();
    void this._groups.run();
  }

  private _filter(split: string, step: string): void {
    this._split = split;
    this._step = step;
    this._cursor = [];
  }

  private _charts(run: RunRecord) {
    const charts = runCharts(run);
    if (!charts.length) return html`<p class="muted">Nothing logged yet: metrics appear here after POST /v1/preview/models/{id}/log.</p>`;
    return html`<div class="charts">${charts.map((c) => html`<hearth-line-chart data-metric=${c.metric} heading=${c.metric} .series=${c.series}></hearth-line-chart>`)}</div>`;
  }

  private _trajectories(run: RunRecord | undefined) {
    const splits = [...new Set(run?.history.map((h) => h.split) ?? [])];
    const steps = [...new Set(run?.history.filter((h) => !this._split || h.split === this._split).map((h) => h.step) ?? [])].sort(
      (a, b) => a - b,
    );
    return html`
      <form class="grid" @submit=${(e: Event) => e.preventDefault()} aria-label="Filter trajectories">
        <label>Split
          <select @change=${(e: Event) => this._filter((e.target as HTMLSelectElement).value, this._step)}>
            <option value="">All</option>
            ${splits.map((s) => html`<option value=${s} ?selected=${s === this._split}>${s}</option>`)}
          </select></label>
        <label>Step
          <select @change=${(e: Event) => this._filter(this._split, (e.target as HTMLSelectElement).value)}>
            <option value="">All</option>
            ${steps.map((s) => html`<option value=${String(s)} ?selected=${String(s) === this._step}>${s}</option>`)}
          </select></label>
      </form>
      ${this._groups.render({
        // A live re-read keeps the page drawn; a new model or filter shows that it is loading.
        pending: () =>
          this._liveQuery === this._groupsQuery ? this._groupList(this._groups.value) : html`<p role="status">Loading trajectories…</p>`,
        error: (e) => html`<p class="error" role="alert">Cannot read trajectories: ${(e as Error).message}</p>`,
        complete: (page) => this._groupList(page),
      })}
    `;
  }

  private _groupList(page: ListPage<LoggedGroup> | undefined) {
    return !page || page.data.length === 0
      ? html`<p class="muted">No trajectory groups logged${this._split || this._step ? ' for this filter' : ''}.</p>`
      : html`${page.data.map(
          (g) => html`<div class="group" data-group=${g.id}>
              <div class="spread"><strong>${g.split}, step ${g.step}</strong><span class="muted">${formatTime(g.logged_at)}</span></div>
              ${
                Object.keys(g.group.metrics ?? {}).length
                  ? html`<p class="muted">${Object.entries(g.group.metrics ?? {})
                      .map(([k, v]) => `${k} ${formatMetric(v)}`)
                      .join(' · ')}</p>`
                  : nothing
              }
              <div class="tiles" style="--tile-gap:0.6rem">${g.group.trajectories.map((t) => html`<hearth-trajectory .trajectory=${t}></hearth-trajectory>`)}</div>
              ${(g.group.exceptions ?? []).map((x) => html`<p class="error">${x.type}: ${x.message}</p>`)}
            </div>`,
        )}
          <div class="row" style="margin-top:0.6rem">
            <button ?disabled=${this._cursor.length === 0} @click=${() => (this._cursor = this._cursor.slice(0, -1))}>Newer</button>
            <button ?disabled=${!page.has_more} @click=${() => (this._cursor = [...this._cursor, page.last_id ?? ''])}>Older</button>
          </div>`;
  }

  override render() {
    const models = this._models.value;
    return html`
      <h2>Runs</h2>
      ${this._models.render({
        pending: () => html`<p role="status">Loading models…</p>`,
        error: (e) => html`<p class="error" role="alert">Cannot list models: ${(e as Error).message}</p>`,
        complete: () => nothing,
      })}
      ${models && models.length === 0 ? html`<p class="notice">No models yet: register one in Models, or run the demo.</p>` : nothing}
      ${
        models?.length
          ? html`<div class="row">
            <label>Model
              <select @change=${(e: Event) => (location.hash = `#/runs/${(e.target as HTMLSelectElement).value}`)}>
                ${models.map((m) => html`<option value=${m.id} ?selected=${m.id === this._model}>${m.entity}/${m.project}/${m.name}</option>`)}
              </select></label>
            <button @click=${this._refresh}>Refresh</button>
          </div>
          <section class="card" aria-labelledby="metrics">
            <h3 id="metrics">Metrics by step</h3>
            ${this._run.render({
              pending: () =>
                this._run.value?.model_id === this._model ? this._charts(this._run.value) : html`<p role="status">Loading the run…</p>`,
              error: (e) => html`<p class="error" role="alert">Cannot read the run: ${(e as Error).message}</p>`,
              complete: (run) => (run ? this._charts(run) : nothing),
            })}
          </section>
          <section class="card" aria-labelledby="trajectories">
            <h3 id="trajectories">Trajectories</h3>
            ${this._trajectories(this._run.value)}
          </section>`
          : nothing
      }
    `;
  }
}

declare global {
  interface HTMLElementTagNameMap {
    'hearth-runs': HearthRuns;
  }
}
