/**
 * `<hearth-backend-settings>`: which backend serves chat (WebGPU, or the CPU: llama.cpp in
 * WebAssembly), with how many threads and why, what it cannot do with the reason, and the choice
 * "Automatic" (WebGPU when the browser has an adapter) or "CPU" (PATCH /v1/preview/engine, admin
 * key), which applies when the engine next starts (reload its tab).
 *
 * Without cross-origin isolation (COOP/COEP headers) a page has no SharedArrayBuffer, so llama.cpp
 * runs one thread: this card says so.
 *
 * Not here: the GPU's limits and the job queue (engine-status.ts).
 */
import { LitElement, css, html, nothing } from 'lit';
import { customElement, state } from 'lit/decorators.js';
import { apiSend } from './api-client';
import { EngineFeed } from './engine-feed';
import { shared } from './theme';

@customElement('hearth-backend-settings')
export class HearthBackendSettings extends LitElement {
  static override styles = [
    shared,
    css`
      .badge {
        display: inline-block;
        padding: 0.05rem 0.45rem;
        border-radius: 0.6rem;
        font-size: 0.8rem;
        border: 1px solid var(--hearth-border);
        background: var(--hearth-surface-2);
      }
      ul {
        margin: 0.3rem 0 0.6rem;
        padding-left: 1.2rem;
      }
    `,
  ];

  private readonly _engine = new EngineFeed(this);
  @state() private _message = '';

  private async _choose(backend: string): Promise<void> {
    this._message = '';
    try {
      await apiSend('PATCH', '/v1/preview/engine', { backend });
      this._message = 'Saved: it applies when the engine next starts (reload the tab that hosts it, or all of Hearth’s tabs).';
    } catch (err) {
      this._message = `Cannot save: ${(err as Error).message}`;
    }
  }

  override render() {
    const status = this._engine.status;
    const backend = status?.backend;
    const isolated = globalThis.crossOriginIsolated === true;
    return html`
      <h3 id="backend">Backend</h3>
      ${
        backend
          ? html`<p>
              <span class="badge" data-backend=${backend.kind}>${backend.kind === 'cpu' ? 'CPU' : 'WebGPU'}</span>
              <span data-field="backend">${backend.description}</span>
            </p>`
          : html`<p class="muted" role="status">${status ? 'Nothing can generate here.' : 'Reading the engine…'}</p>`
      }
      ${
        backend?.kind === 'cpu' && !isolated
          ? html`<p class="muted" data-field="threads">
              This page is not cross-origin isolated (no COOP/COEP headers), so llama.cpp runs one thread. Serve Hearth with
              <code>Cross-Origin-Opener-Policy: same-origin</code> and <code>Cross-Origin-Embedder-Policy: require-corp</code>
              (<code>npm start</code> does; the Service Worker adds them from the second load on).
            </p>`
          : nothing
      }
      ${
        backend && backend.unsupported.length > 0
          ? html`<p>Not on this backend:</p>
              <ul data-field="unsupported">
                ${backend.unsupported.map((u) => html`<li><code>${u.feature}</code> ${u.reason}</li>`)}
              </ul>`
          : nothing
      }
      <label
        >Run chat on
        <select aria-label="Backend" @change=${(e: Event) => void this._choose((e.target as HTMLSelectElement).value)}>
          <option value="auto" ?selected=${status?.backend_preference !== 'cpu'}>Automatic: WebGPU when there is an adapter, else the CPU</option>
          <option value="cpu" ?selected=${status?.backend_preference === 'cpu'}>CPU (llama.cpp in WebAssembly)</option>
        </select>
      </label>
      ${this._message ? html`<p role="status">${this._message}</p>` : nothing}
    `;
  }
}

declare global {
  interface HTMLElementTagNameMap {
    'hearth-backend-settings': HearthBackendSettings;
  }
}
