/**
 * `<hearth-base-models>`: the base models Hearth knows (bundled, downloaded, added from files)
 * with what a bundled one is for, architecture, size, format (safetensors, quantized on load or not, or GGUF and its quantization), GPU bytes and
 * status; loading a new one from a Hugging Face repo id (optionally one GGUF file of it, optionally through a mirror) or
 * a URL, or from files picked from disk; a progress bar with bytes, speed and time left while it
 * downloads (the download runs in the engine and its progress is kept by the API, so it is still
 * there after a reload); removing cached weights.
 *
 * Not here: registered (trainable) models (registered-models.ts).
 */
import { LitElement, css, html, nothing } from 'lit';
import { customElement, state } from 'lit/decorators.js';
import { apiGet, apiSend, apiUpload, type ListPage } from './api-client';
import { formatBytes, formatCount, formatDuration, formatRate } from './format';
import { Poller } from './poller';
import { shared, statusClass } from './theme';
import type { BaseModel } from './types';

const isMoving = (m: BaseModel) => m.status === 'downloading';

@customElement('hearth-base-models')
export class HearthBaseModels extends LitElement {
  static override styles = [
    shared,
    css`
      .progress {
        display: grid;
        gap: 0.2rem;
        min-width: 12rem;
      }
      .description {
        display: block;
        max-width: 32rem;
        margin-top: 0.2rem;
      }
      .tabs {
        display: flex;
        gap: 0.25rem;
        margin-bottom: 0.6rem;
      }
      .tabs button[aria-pressed='true'] {
        background: var(--hearth-accent-soft);
        border-color: var(--hearth-accent);
      }
    `,
  ];

  @state() private _source: 'huggingface' | 'url' | 'files' = 'huggingface';
  @state() private _error = '';
  @state() private _busy = false;

  private readonly _models = new Poller<BaseModel[]>(this, {
    read: async (signal) => (await apiGet<ListPage<BaseModel>>('/v1/preview/base-models', signal)).data,
    live: (models) => models.some(isMoving),
    intervalMs: 1000,
  });

  /** Reads the list again now (a download was started elsewhere in the view). */
  refresh(): void {
    void this._models.refresh();
  }

  private async _submit(e: SubmitEvent): Promise<void> {
    e.preventDefault();
    // The event's target is cleared once dispatch ends (shadow DOM): keep the form.
    const form = e.target as HTMLFormElement;
    const data = new FormData(form);
    const text = (k: string) => String(data.get(k) ?? '').trim();
    this._busy = true;
    this._error = '';
    try {
      if (this._source === 'files') {
        const files = data.getAll('file').filter((f): f is File => f instanceof File && f.size > 0);
        if (!files.length)
          throw new Error(
            'Pick the model files: config.json, the tokenizer files and the .safetensors weights, or the .gguf file (every part of a split one).',
          );
        const fields = {
          ...(text('id') ? { id: text('id') } : {}),
          ...(text('quantization') ? { quantization: text('quantization') } : {}),
        };
        await apiUpload('/v1/preview/base-models/files', fields, files);
      } else {
        const source =
          this._source === 'url'
            ? { type: 'url', url: text('url') }
            : {
                type: 'huggingface',
                repo: text('repo'),
                ...(text('revision') ? { revision: text('revision') } : {}),
                ...(text('base_url') ? { base_url: text('base_url') } : {}),
                ...(text('gguf') ? { file: text('gguf') } : {}),
              };
        await apiSend('POST', '/v1/preview/base-models', {
          source,
          ...(text('quantization') ? { quantization: text('quantization') } : {}),
        });
      }
      form.reset();
    } catch (err) {
      this._error = (err as Error).message;
    } finally {
      this._busy = false;
      void this._models.refresh();
    }
  }

  private async _remove(m: BaseModel): Promise<void> {
    if (
      !confirm(
        `Remove the cached weights of ${m.id} (${formatBytes(m.cached_bytes)})? ${m.source === 'bundled' ? 'It stays listed and downloads again when used.' : 'Load it again to use it.'}`,
      )
    )
      return;
    try {
      await apiSend('DELETE', `/v1/preview/base-models/${encodeURIComponent(m.id)}`);
    } catch (err) {
      this._error = (err as Error).message;
    }
    void this._models.refresh();
  }

  /** A paused or failed download asked again: the API resumes it from the last stored chunk. */
  private async _resume(m: BaseModel): Promise<void> {
    const o = m.origin;
    // Without base_url the API keeps the mirror this download used.
    const source =
      o.type === 'huggingface'
        ? { type: 'huggingface', repo: o.repo, ...(o.revision ? { revision: o.revision } : {}), ...(o.file ? { file: o.file } : {}) }
        : { type: 'url', url: m.id };
    this._error = '';
    try {
      await apiSend('POST', '/v1/preview/base-models', { source });
    } catch (err) {
      this._error = (err as Error).message;
    }
    void this._models.refresh();
  }

  private _progress(m: BaseModel) {
    const d = m.download;
    if (!d) return nothing;
    if (d.error) return html`<p class="error" role="alert">${d.error}</p>`;
    if (m.status !== 'downloading' && m.status !== 'paused') return nothing;
    const left = d.bytes_per_second > 0 && d.total ? ((d.total - d.loaded) / d.bytes_per_second) * 1000 : null;
    return html`<div class="progress" data-field="progress">
      <progress max=${d.total || 1} value=${d.loaded} aria-label=${`Download of ${m.id}`}></progress>
      <span class="muted">${formatBytes(d.loaded)} of ${formatBytes(d.total)} · ${formatRate(d.bytes_per_second)} · ${formatDuration(left)} left${m.status === 'paused' ? ' · paused' : ''}</span>
    </div>`;
  }

  private _table(models: BaseModel[]) {
    return html`<div class="table-wrap">
      <table>
        <thead><tr><th>Model</th><th>Architecture</th><th>Parameters</th><th>Size</th><th>Status</th><th><span class="visually-hidden">Actions</span></th></tr></thead>
        <tbody>
          ${models.map(
            (m) => html`<tr data-base-model=${m.id}>
              <td><strong>${m.id}</strong>${m.default ? html` <span class="pill">default</span>` : nothing}<br /><span class="muted">${m.source}${m.max_model_len ? ` · context ${formatCount(m.max_model_len)}` : ''}</span>
                ${m.description ? html`<span class="muted description" data-field="description">${m.description}</span>` : nothing}</td>
              <td>${m.architecture ?? '—'}</td>
              <td>${formatCount(m.parameters)}</td>
              <td>${formatBytes(m.bytes)}${m.cached_bytes ? html`<br /><span class="muted">${formatBytes(m.cached_bytes)} cached</span>` : nothing}
                <br /><span class="muted" data-field="format">${m.format === 'gguf' ? `GGUF${m.quantization ? ` ${m.quantization}` : ''}` : `safetensors${m.quantization ? ` as ${m.quantization}` : ''}`}${m.gpu_bytes ? ` · ${formatBytes(m.gpu_bytes)} on GPU` : ''}</span></td>
              <td><span class=${statusClass(m.status)} data-field="status">${m.status}</span>${m.loaded ? html` <span class="pill ok">on GPU</span>` : nothing}${this._progress(m)}${(m.warnings ?? []).map((w) => html`<p class="muted" data-field="warning">⚠ ${w}</p>`)}</td>
              <td class="row">
                ${
                  (m.status === 'paused' || m.status === 'error') && (m.source === 'huggingface' || m.source === 'url')
                    ? html`<button @click=${() => this._resume(m)} aria-label=${`Resume download of ${m.id}`}>${m.status === 'error' ? 'Retry' : 'Resume'}</button>`
                    : nothing
                }
                ${
                  m.cached_bytes > 0 || m.status === 'cached' || m.source !== 'bundled'
                    ? html`<button class="danger" @click=${() => this._remove(m)} aria-label=${`Remove cached weights of ${m.id}`}>Remove</button>`
                    : nothing
                }
              </td>
            </tr>`,
          )}
        </tbody>
      </table>
    </div>`;
  }

  private _form() {
    const tab = (id: typeof this._source, label: string) =>
      html`<button type="button" aria-pressed=${this._source === id ? 'true' : 'false'} @click=${() => (this._source = id)}>${label}</button>`;
    return html`
      <h3 id="load-model">Load a base model</h3>
      <div class="tabs" role="group" aria-label="Source">${tab('huggingface', 'Hugging Face')}${tab('url', 'URL')}${tab('files', 'Files from disk')}</div>
      <form class="grid" @submit=${this._submit} aria-labelledby="load-model">
        ${
          this._source === 'huggingface'
            ? html`<label>Repository id <input name="repo" required placeholder="HuggingFaceTB/SmolLM2-135M-Instruct" /></label>
              <label>GGUF file (optional) <input name="gguf" placeholder="SmolLM2-135M-Instruct-Q8_0.gguf" /></label>
              <label>Revision (optional) <input name="revision" placeholder="main" /></label>
              <label>Mirror base URL (optional) <input name="base_url" type="url" placeholder="https://hf-mirror.com" /></label>`
            : this._source === 'url'
              ? html`<label style="grid-column: 1 / -1">Folder URL (or a .gguf file's URL) <input name="url" type="url" required placeholder="https://example.com/models/my-model/" /></label>`
              : html`<label>Model files <input name="file" type="file" multiple accept=".json,.safetensors,.txt,.model,.jinja,.gguf" /></label>
                <label>Model id (optional) <input name="id" placeholder="local/my-model" /></label>`
        }
        <label
          >Quantize on load (safetensors)
          <select name="quantization">
            <option value="">No: the file's precision</option>
            <option value="q8_0">Q8_0 (8-bit)</option>
            <option value="q4_k">Q4_K (4-bit)</option>
          </select></label
        >
        <div><button class="primary" type="submit" ?disabled=${this._busy}>${this._source === 'files' ? 'Add model' : 'Download'}</button></div>
      </form>
      ${this._error ? html`<p class="error" role="alert">${this._error}</p>` : nothing}
    `;
  }

  override render() {
    const models = this._models.value;
    return html`
      <section class="card" aria-labelledby="base-models">
        <div class="spread"><h3 id="base-models">Base models</h3><button @click=${() => this._models.refresh()}>Refresh</button></div>
        ${this._models.error ? html`<p class="error" role="alert">Cannot list base models: ${this._models.error}</p>` : nothing}
        ${models ? this._table(models) : this._models.error ? nothing : html`<p role="status">Loading…</p>`}
        ${this._form()}
      </section>
    `;
  }
}

declare global {
  interface HTMLElementTagNameMap {
    'hearth-base-models': HearthBaseModels;
  }
}
