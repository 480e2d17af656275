/**
 * `<hearth-recommended-models>`: the recommended base models (recommended-models.json) in each
 * published format, with about how much each downloads and needs on the GPU (model-size.ts)
 * against this device's limits from the engine status, and one click to download one. A model
 * already added shows its status instead. Gated repositories say they need the token (Settings).
 *
 * Browsers do not report a GPU's total memory, so "fits" cannot be known: the view shows the
 * bytes needed beside the limits the adapter does report (largest buffer and binding), and says
 * when the embedding is larger than one binding (the engine then splits it in row chunks).
 *
 * Not here: the download (POST /v1/preview/base-models), the base-model list (base-models-panel.ts).
 */
import { LitElement, css, html, nothing } from 'lit';
import { customElement, state } from 'lit/decorators.js';
import { apiGet, apiSend, type ListPage } from './api-client';
import { EngineFeed } from './engine-feed';
import { Poller } from './poller';
import { formatBytes, formatCount } from './format';
import { kvCacheBytes, largestTensorBytes, parameterCount, weightBytes, type FileType, type ModelShape } from './model-size';
import recommended from './recommended-models.json';
import { shared, statusClass } from './theme';
import type { BaseModel } from './types';

interface Download {
  format: 'safetensors' | 'gguf';
  repo: string;
  file?: string;
  type: FileType;
  gated?: boolean;
}

interface Recommended {
  name: string;
  shape: ModelShape;
  downloads: Download[];
}

const MODELS = recommended.models as Recommended[];

/** The id the API gives a download (service/base-models/gguf.ts): the repo, or "repo/file" for a GGUF file. */
export function downloadId(d: Pick<Download, 'repo' | 'file'>): string {
  return d.file ? `${d.repo}/${d.file}` : d.repo;
}

@customElement('hearth-recommended-models')
export class HearthRecommendedModels extends LitElement {
  static override styles = [
    shared,
    css`
      td.num {
        white-space: nowrap;
      }
    `,
  ];

  @state() private _error = '';
  @state() private _busy = '';

  private readonly _engine = new EngineFeed(this);
  /** The base models already known, to show a recommended one's status instead of its button. */
  private readonly _known = new Poller<BaseModel[]>(this, {
    read: async (signal) => (await apiGet<ListPage<BaseModel>>('/v1/preview/base-models', signal)).data,
    live: (models) => models.some((m) => m.status === 'downloading'),
    intervalMs: 2000,
  });

  private async _download(d: Download): Promise<void> {
    this._busy = downloadId(d);
    this._error = '';
    try {
      await apiSend('POST', '/v1/preview/base-models', {
        source: { type: 'huggingface', repo: d.repo, ...(d.file ? { file: d.file } : {}) },
      });
      this.dispatchEvent(new CustomEvent('download-started', { bubbles: true, composed: true }));
      await this._known.refresh();
    } catch (err) {
      this._error = `${downloadId(d)}: ${(err as Error).message}`;
    } finally {
      this._busy = '';
    }
  }

  private _row(m: Recommended, d: Download, i: number) {
    const gpu = this._engine.status?.gpu;
    const weights = weightBytes(m.shape, d.type);
    const kv = kvCacheBytes(gpu?.adapter.isSoftware ?? false);
    const binding = gpu?.limits.maxStorageBufferBindingSize;
    const largest = largestTensorBytes(m.shape, d.type);
    const known = this._known.value?.find((b) => b.id === downloadId(d));
    const label = `${m.name} ${d.format === 'gguf' ? `GGUF ${d.type}` : `safetensors ${d.type}`}`;
    return html`<tr data-recommended=${downloadId(d)}>
      ${i === 0 ? html`<td rowspan=${m.downloads.length}><strong>${m.name}</strong><br /><span class="muted">${m.shape.arch} · ${formatCount(parameterCount(m.shape))} parameters</span></td>` : nothing}
      <td>${d.format === 'gguf' ? `GGUF ${d.type}` : `safetensors ${d.type}`}<br /><span class="muted">${d.repo}</span>${d.gated ? html`<br /><span class="muted" data-field="gated">gated: accept its license on the Hub, then set your Hugging Face access token in <a href="#/settings">Settings</a></span>` : nothing}</td>
      <td class="num">about ${formatBytes(weights)}</td>
      <td class="num" data-field="gpu">about ${formatBytes(weights + kv)}
        ${binding && largest > binding ? html`<br /><span class="muted">embedding in ${Math.ceil(largest / binding)} bindings</span>` : nothing}</td>
      <td>${
        known
          ? html`<span class=${statusClass(known.status)}>${known.status}</span>`
          : html`<button ?disabled=${this._busy !== ''} @click=${() => this._download(d)} aria-label=${`Download ${label}`}>Download</button>`
      }</td>
    </tr>`;
  }

  override render() {
    const gpu = this._engine.status?.gpu;
    return html`
      <section class="card" aria-labelledby="recommended">
      <h3 id="recommended">Recommended models</h3>
      <p class="muted" data-field="limits">
        Sizes are estimates from each model's shape and its type's bits per weight. GPU memory is the weights plus the engine's KV cache
        (${formatBytes(kvCacheBytes(gpu?.adapter.isSoftware ?? false))}).
        ${
          gpu
            ? html`This GPU (${gpu.adapter.description || gpu.adapter.vendor || 'adapter'}${gpu.adapter.isSoftware ? ', software: slow for large models' : ''})
              allows buffers up to ${formatBytes(gpu.limits.maxBufferSize)} and bindings up to ${formatBytes(gpu.limits.maxStorageBufferBindingSize)};
              browsers do not report its total memory.`
            : 'The GPU limits show once the engine has its GPU.'
        }
      </p>
      <div class="table-wrap">
        <table aria-labelledby="recommended">
          <thead><tr><th>Model</th><th>Format</th><th>Download</th><th>GPU memory</th><th><span class="visually-hidden">Action</span></th></tr></thead>
          <tbody>${MODELS.map((m) => m.downloads.map((d, i) => this._row(m, d, i)))}</tbody>
        </table>
      </div>
      ${this._error ? html`<p class="error" role="alert">${this._error}</p>` : nothing}
      </section>
    `;
  }
}

declare global {
  interface HTMLElementTagNameMap {
    'hearth-recommended-models': HearthRecommendedModels;
  }
}
