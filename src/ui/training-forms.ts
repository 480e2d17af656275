/**
 * `<hearth-training-forms>`: starting a training job. SFT: a model, the data (a JSONL file
 * picked from disk, uploaded as an artifact, or an artifact / data URL), batch size and
 * learning rate. RL: a model and the trajectory groups it logged at one split and step (read
 * through GET /models/{id}/trajectories), with a learning rate. Fires `hearth-job-started`
 * with `{detail: job}` once the API accepted the job. On a backend that cannot train (the CPU
 * one, without WebGPU) both forms are disabled and say why.
 *
 * Not here: following a job (training-job.ts), the job list (training-view.ts).
 */
import { LitElement, html, nothing } from 'lit';
import { customElement, property, state } from 'lit/decorators.js';
import { Task } from '@lit/task';
import { apiGetAll, apiSend, apiUpload } from './api-client';
import { BusyAction } from './busy-action';
import { EngineFeed } from './engine-feed';
import { shared } from './theme';
import type { LoggedGroup, Model, TrainingJob } from './types';

@customElement('hearth-training-forms')
export class HearthTrainingForms extends LitElement {
  static override styles = [shared];

  /** Preselects a model (from `#/training?model=<id>`). */
  @property() modelId = '';
  private readonly _action = new BusyAction(this);
  private readonly _engine = new EngineFeed(this);
  @state() private _rlModel = '';

  /** Why this engine cannot train (its backend's reason), or undefined when it can. */
  private get _cannotTrain(): string | undefined {
    const u = this._engine.status?.backend?.unsupported.find((x) => x.feature === 'training');
    return u && `Training ${u.reason}.`;
  }

  private readonly _models = new Task(this, {
    task: async (_a, { signal }) => apiGetAll<Model>('/v1/preview/models?order=desc', signal),
    args: () => [],
  });

  private readonly _logged = new Task(this, {
    task: async ([id], { signal }) =>
      id ? apiGetAll<LoggedGroup>(`/v1/preview/models/${encodeURIComponent(id)}/trajectories`, signal) : ([] as LoggedGroup[]),
    args: () => [this._rlModel] as const,
  });

  private _started(job: TrainingJob): void {
    this.dispatchEvent(new CustomEvent('hearth-job-started', { detail: job, bubbles: true, composed: true }));
  }

  private async _sft(e: SubmitEvent): Promise<void> {
    e.preventDefault();
    const d = new FormData(e.target as HTMLFormElement);
    const modelId = String(d.get('model_id'));
    const file = d.get('file');
    const url = String(d.get('url') ?? '').trim();
    const lr = String(d.get('learning_rate')).trim();
    const batch = String(d.get('batch_size')).trim();
    await this._action.run(async () => {
      let dataUrl = url;
      if (file instanceof File && file.size > 0) {
        const artifact = await apiUpload<{ url: string }>('/v1/preview/artifacts', { model_id: modelId, name: file.name }, [file]);
        dataUrl = artifact.url;
      }
      if (!dataUrl) throw new Error('Pick a JSONL file, or give an artifact URL.');
      const config: Record<string, number> = {};
      if (batch) config.batch_size = Number(batch);
      if (lr) config.learning_rate = Number(lr);
      this._started(
        await apiSend<TrainingJob>('POST', '/v1/preview/sft-training-jobs', { model_id: modelId, training_data_url: dataUrl, config }),
      );
    });
  }

  private async _rl(e: SubmitEvent, logged: LoggedGroup[]): Promise<void> {
    e.preventDefault();
    const d = new FormData(e.target as HTMLFormElement);
    const [split, step] = String(d.get('batch')).split('@');
    const groups = logged.filter((g) => g.split === split && String(g.step) === step).map((g) => g.group);
    const lr = String(d.get('learning_rate')).trim();
    await this._action.run(async () => {
      if (!groups.length) throw new Error('Choose logged trajectory groups to train on.');
      this._started(
        await apiSend<TrainingJob>('POST', '/v1/preview/training-jobs', {
          model_id: this._rlModel,
          trajectory_groups: groups,
          experimental_config: lr ? { learning_rate: Number(lr) } : {},
        }),
      );
    });
  }

  private _modelSelect(models: Model[], selected: string, onChange?: (id: string) => void) {
    return html`<label>Model
      <select name="model_id" required @change=${(e: Event) => onChange?.((e.target as HTMLSelectElement).value)}>
        ${models.map((m) => html`<option value=${m.id} ?selected=${m.id === selected}>${m.entity}/${m.project}/${m.name}</option>`)}
      </select></label>`;
  }

  protected override willUpdate(): void {
    const models = this._models.value;
    if (!this._rlModel && models?.length) this._rlModel = models.find((m) => m.id === this.modelId)?.id ?? models[0].id;
  }

  private _rlForm(models: Model[]) {
    const batches = (logged: LoggedGroup[]) => {
      const seen = new Map<string, number>();
      for (const g of logged) seen.set(`${g.split}@${g.step}`, (seen.get(`${g.split}@${g.step}`) ?? 0) + 1);
      return [...seen];
    };
    return html`<form class="grid" aria-labelledby="rl" @submit=${(e: SubmitEvent) => this._rl(e, this._logged.value ?? [])}>
      ${this._modelSelect(models, this._rlModel, (id) => (this._rlModel = id))}
      <label>Trajectory groups
        <select name="batch" required>
          ${this._logged.render({
            pending: () => html`<option value="">Loading…</option>`,
            error: (e) => html`<option value="">Cannot read logs: ${(e as Error).message}</option>`,
            complete: (logged) =>
              logged.length
                ? batches(logged).map(([k, n]) => {
                    const [split, step] = k.split('@');
                    return html`<option value=${k}>${split}, step ${step}: ${n} group${n === 1 ? '' : 's'}</option>`;
                  })
                : html`<option value="">Nothing logged yet</option>`,
          })}
        </select></label>
      <label>Learning rate <input name="learning_rate" type="number" step="any" min="0" value="0.0001" /></label>
      <div><button class="primary" type="submit" ?disabled=${this._action.busy || !!this._cannotTrain}>Start RL job</button></div>
    </form>`;
  }

  override render() {
    return this._models.render({
      pending: () => html`<p role="status">Loading models…</p>`,
      error: (e) => html`<p class="error" role="alert">Cannot list models: ${(e as Error).message}</p>`,
      complete: (models) =>
        models.length === 0
          ? html`<p class="notice">Register a model first (Models view), then train it here.</p>`
          : html`${this._cannotTrain ? html`<p class="notice" data-field="cannot-train">${this._cannotTrain}</p>` : nothing}
              <div class="tiles" style="--tile-min:20rem;--tile-gap:1rem">
                <section class="card" aria-labelledby="sft">
                  <h3 id="sft">Supervised fine-tuning</h3>
                  <form class="grid" aria-labelledby="sft" @submit=${this._sft}>
                    ${this._modelSelect(models, this.modelId)}
                    <label>Training data (JSONL) <input name="file" type="file" accept=".jsonl,.json,.txt,application/jsonl" /></label>
                    <label>…or an artifact URL <input name="url" placeholder="/v1/preview/artifacts/…" /></label>
                    <label>Batch size <input name="batch_size" type="number" min="1" step="1" value="2" /></label>
                    <label>Learning rate <input name="learning_rate" type="number" step="any" min="0" value="0.0001" /></label>
                    <div><button class="primary" type="submit" ?disabled=${this._action.busy || !!this._cannotTrain}>
                        Start SFT job
                      </button></div>
                  </form>
                  <p class="muted">One <code>{"messages": [...]}</code> per line, each ending with the assistant's answer.</p>
                </section>
                <section class="card" aria-labelledby="rl">
                  <h3 id="rl">Reinforcement learning</h3>
                  ${this._rlForm(models)}
                  <p class="muted">Trains on trajectory groups the model logged (POST /log) with their rewards.</p>
                </section>
              </div>
              ${this._action.error ? html`<p class="error" role="alert">${this._action.error}</p>` : nothing}`,
    });
  }
}

declare global {
  interface HTMLElementTagNameMap {
    'hearth-training-forms': HearthTrainingForms;
  }
}
