/**
 * `<hearth-registered-models>`: the caller's trainable models: register one on a base model,
 * list them with their checkpoints (model-checkpoints.ts), delete a whole model after a
 * confirmation that says what goes with it, and import a PEFT adapter as a new model.
 *
 * Not here: base models (base-models-panel.ts), training (training-view.ts).
 */
import { LitElement, html, nothing } from 'lit';
import { customElement, state } from 'lit/decorators.js';
import { repeat } from 'lit/directives/repeat.js';
import { Task } from '@lit/task';
import { apiGet, apiGetAll, apiSend, apiUpload } from './api-client';
import { formatTime } from './format';
import { BusyAction } from './busy-action';
import { shared } from './theme';
import type { Checkpoint, Model } from './types';
import './model-checkpoints';

@customElement('hearth-registered-models')
export class HearthRegisteredModels extends LitElement {
  static override styles = shared;

  private readonly _action = new BusyAction(this);
  /** Models whose details are open: only those read their checkpoints. */
  @state() private _open = new Set<string>();

  private readonly _models = new Task(this, {
    task: async (_a, { signal }) => {
      const [models, engine] = await Promise.all([
        apiGetAll<Model>('/v1/preview/models?order=desc', signal),
        apiGet<{ base_models: { id: string; default?: boolean }[] }>('/v1/preview/engine', signal),
      ]);
      return { models, bases: engine.base_models };
    },
    args: () => [],
  });

  private async _register(e: SubmitEvent): Promise<void> {
    e.preventDefault();
    const form = e.target as HTMLFormElement;
    const d = new FormData(form);
    await this._do(async () => {
      await apiSend('POST', '/v1/preview/models', {
        entity: null,
        project: String(d.get('project')).trim(),
        name: String(d.get('name')).trim(),
        base_model: String(d.get('base_model')),
        return_existing: false,
      });
      form.reset();
    });
  }

  private async _import(e: SubmitEvent): Promise<void> {
    e.preventDefault();
    const form = e.target as HTMLFormElement;
    const d = new FormData(form);
    const files = d.getAll('file').filter((f): f is File => f instanceof File && f.size > 0);
    await this._do(async () => {
      if (!files.length) throw new Error('Pick the adapter: its zip, or adapter_config.json and adapter_model.safetensors.');
      await apiUpload(
        '/v1/preview/models/import',
        { project: String(d.get('project')).trim(), name: String(d.get('name')).trim(), base_model: String(d.get('base_model')) },
        files,
      );
      form.reset();
    });
  }

  private async _delete(m: Model): Promise<void> {
    let count = '';
    try {
      const cps = await apiGetAll<Checkpoint>(`/v1/preview/models/${encodeURIComponent(m.id)}/checkpoints`);
      count = `${cps.length} checkpoint${cps.length === 1 ? '' : 's'}`;
    } catch {
      count = 'its checkpoints';
    }
    if (
      !confirm(
        `Delete the model ${m.entity}/${m.project}/${m.name}? This deletes ${count} (LoRA adapters), its uploaded artifacts, trajectory logs, training jobs and run history. The base model ${m.base_model} stays.`,
      )
    )
      return;
    await this._do(() => apiSend('DELETE', `/v1/preview/models/${encodeURIComponent(m.id)}`));
  }

  /** Runs a change, then re-reads the list whether it worked or not. */
  private async _do(fn: () => Promise<unknown>): Promise<void> {
    await this._action.run(fn);
    void this._models.run();
  }

  private _toggle(id: string, open: boolean): void {
    if (open === this._open.has(id)) return;
    const next = new Set(this._open);
    if (open) next.add(id);
    else next.delete(id);
    this._open = next;
  }

  private _baseSelect(bases: { id: string; default?: boolean }[]) {
    return html`<label>Base model <select name="base_model" required>${bases.map((b) => html`<option value=${b.id} ?selected=${b.default}>${b.id}</option>`)}</select></label>`;
  }

  override render() {
    // While re-reading (after a change) the previous list stays up.
    return this._models.render({
      pending: () =>
        this._models.value ? this._content(this._models.value) : html`<section class="card"><p role="status">Loading models…</p></section>`,
      error: (e) => html`<section class="card"><p class="error" role="alert">Cannot list models: ${(e as Error).message}</p></section>`,
      complete: (value) => this._content(value),
    });
  }

  private _content({ models, bases }: { models: Model[]; bases: { id: string; default?: boolean }[] }) {
    return html`
        <section class="card" aria-labelledby="registered">
          <div class="spread"><h3 id="registered">Your models</h3><button @click=${() => this._models.run()}>Refresh</button></div>
          ${models.length === 0 ? html`<p class="muted">No models yet: register one below, or run the demo.</p>` : nothing}
          ${repeat(
            models,
            (m) => m.id,
            (
              m,
            ) => html`<details data-model=${m.name} ?open=${this._open.has(m.id)} @toggle=${(e: Event) => this._toggle(m.id, (e.target as HTMLDetailsElement).open)}>
              <summary><strong>${m.entity}/${m.project}/${m.name}</strong> <span class="muted">on ${m.base_model} · ${formatTime(m.created_at)}</span></summary>
              <p class="row">
                <a class="button" href=${`#/runs/${m.id}`}>Run history</a>
                <a class="button" href=${`#/training?model=${m.id}`}>Train</a>
                <button class="danger" @click=${() => this._delete(m)} aria-label=${`Delete model ${m.name}`}>Delete model</button>
              </p>
              ${this._open.has(m.id) ? html`<hearth-model-checkpoints .model=${m}></hearth-model-checkpoints>` : nothing}
            </details>`,
          )}
          ${this._action.error ? html`<p class="error" role="alert">${this._action.error}</p>` : nothing}
        </section>
        <section class="card" aria-labelledby="register">
          <h3 id="register">Register a model</h3>
          <form class="grid" @submit=${this._register} aria-labelledby="register">
            <label>Project <input name="project" required value="playground" /></label>
            <label>Name <input name="name" required placeholder="my-model" /></label>
            ${this._baseSelect(bases)}
            <div><button class="primary" type="submit" ?disabled=${this._action.busy}>Register</button></div>
          </form>
        </section>
        <section class="card" aria-labelledby="import">
          <h3 id="import">Import a PEFT adapter</h3>
          <form class="grid" @submit=${this._import} aria-labelledby="import">
            <label>Project <input name="project" required value="imported" /></label>
            <label>Name <input name="name" required /></label>
            ${this._baseSelect(bases)}
            <label>Adapter files <input name="file" type="file" multiple accept=".zip,.json,.safetensors" /></label>
            <div><button class="primary" type="submit" ?disabled=${this._action.busy}>Import</button></div>
          </form>
        </section>
    `;
  }
}

declare global {
  interface HTMLElementTagNameMap {
    'hearth-registered-models': HearthRegisteredModels;
  }
}
