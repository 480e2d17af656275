/**
 * `<hearth-settings>`: what Hearth runs on and what it stores. The engine's GPU adapter,
 * features and limits (the live engine status), the storage used per kind (weights,
 * checkpoints, trajectories, artifacts) against the browser's quota, from GET /v1/preview/storage,
 * and the Hugging Face access token and mirror (PATCH /v1/preview/settings): the token field is
 * write-only, the view only learns whether one is set.
 *
 * Not here: keys (keys-view.ts), the endpoint reference (api-reference.ts).
 */
import { LitElement, css, html } from 'lit';
import { customElement, state } from 'lit/decorators.js';
import { live } from 'lit/directives/live.js';
import { Task } from '@lit/task';
import { apiGet, apiSend } from './api-client';
import { formatBytes } from './format';
import { shared } from './theme';
import type { HubSettings, StorageReport } from './types';
import './engine-status';

const KINDS: [keyof StorageReport['kinds'], string][] = [
  ['weights', 'Model weights'],
  ['checkpoints', 'Checkpoints (LoRA adapters)'],
  ['trajectories', 'Trajectory logs'],
  ['artifacts', 'Artifacts (SFT data)'],
  ['other', 'Other'],
];

@customElement('hearth-settings')
export class HearthSettings extends LitElement {
  static override styles = [
    shared,
    css`
      .bar {
        display: flex;
        height: 0.9rem;
        border-radius: 0.45rem;
        overflow: hidden;
        background: var(--hearth-surface-2);
        margin: 0.5rem 0 0.75rem;
      }
      .bar span {
        display: block;
        height: 100%;
      }
      .swatch {
        display: inline-block;
        width: 0.7rem;
        height: 0.7rem;
        border-radius: 0.2rem;
        margin-right: 0.4rem;
        vertical-align: middle;
      }
    `,
  ];

  private readonly _storage = new Task(this, {
    task: async (_args, { signal }) => apiGet<StorageReport>('/v1/preview/storage', signal),
    args: () => [],
  });

  @state() private _hubMessage = '';

  private readonly _hub = new Task(this, {
    task: async (_args, { signal }) => apiGet<HubSettings>('/v1/preview/settings', signal),
    args: () => [],
  });

  /** Saves the form's token (when typed) and mirror, or `change` as given (removing the token). */
  private async _saveHub(form: HTMLFormElement, change?: Record<string, unknown>): Promise<void> {
    const data = new FormData(form);
    const token = String(data.get('token') ?? '').trim();
    const mirror = String(data.get('mirror') ?? '').trim();
    try {
      await apiSend(
        'PATCH',
        '/v1/preview/settings',
        change ?? { ...(token ? { huggingface_token: token } : {}), huggingface_mirror: mirror || null },
      );
      this._hubMessage = 'Saved.';
      // The token field empties (it is never shown again); the mirror field keeps what was saved.
      (form.elements.namedItem('token') as HTMLInputElement).value = '';
    } catch (err) {
      this._hubMessage = (err as Error).message;
    }
    void this._hub.run();
  }

  private _hubCard(h: HubSettings) {
    return html`
      <p data-field="token">${h.huggingface.token_set ? 'A token is set.' : 'No token is set.'} It is sent only to huggingface.co and the mirror below.</p>
      <form
        class="grid"
        @submit=${(e: SubmitEvent) => {
          e.preventDefault();
          void this._saveHub(e.target as HTMLFormElement);
        }}
        aria-label="Hugging Face settings"
      >
        <label>Access token <input name="token" type="password" autocomplete="off" placeholder=${h.huggingface.token_set ? 'unchanged' : 'hf_…'} /></label>
        <label>Mirror base URL (optional) <input name="mirror" type="url" .value=${live(h.huggingface.mirror ?? '')} placeholder="https://hf-mirror.com" /></label>
        <div class="row">
          <button class="primary" type="submit">Save</button>
          ${
            h.huggingface.token_set
              ? html`<button type="button" class="danger" @click=${(e: Event) => this._saveHub((e.target as HTMLElement).closest('form')!, { huggingface_token: null })}>
                Remove token
              </button>`
              : ''
          }
        </div>
      </form>
      ${this._hubMessage ? html`<p role="status">${this._hubMessage}</p>` : ''}
    `;
  }

  private _storageCard(s: StorageReport) {
    const colour = (i: number) => `var(--hearth-series-${(i % 5) + 1})`;
    return html`
      <p data-field="usage"><strong>${formatBytes(s.usage)}</strong> used of <strong>${formatBytes(s.quota)}</strong> this browser allows
        (${s.quota ? ((100 * s.usage) / s.quota).toFixed(s.usage / s.quota < 0.01 ? 2 : 0) : 0}%).</p>
      <div class="bar" role="img" aria-label="Storage used per kind">
        ${KINDS.map(([k], i) => html`<span style="width:${s.quota ? (100 * s.kinds[k]) / s.quota : 0}%;min-width:${s.kinds[k] ? 2 : 0}px;background:${colour(i)}"></span>`)}
      </div>
      <table data-field="kinds">
        <tbody>
          ${KINDS.map(([k, label], i) => html`<tr><td><span class="swatch" style="background:${colour(i)}"></span>${label}</td><td data-kind=${k}>${formatBytes(s.kinds[k])}</td></tr>`)}
        </tbody>
      </table>
    `;
  }

  override render() {
    return html`
      <h2>Settings</h2>
      <section class="card" aria-labelledby="storage">
        <div class="spread">
          <h3 id="storage">Storage</h3>
          <button @click=${() => this._storage.run()}>Refresh</button>
        </div>
        ${this._storage.render({
          pending: () => html`<p role="status">Measuring storage…</p>`,
          error: (e) => html`<p class="error" role="alert">Cannot read storage: ${(e as Error).message}</p>`,
          complete: (s) => this._storageCard(s),
        })}
      </section>
      <section class="card" aria-labelledby="hub">
        <h3 id="hub">Hugging Face</h3>
        <p class="muted">A token (huggingface.co, Settings, Access Tokens, read access) lets gated repositories such as Llama 3.2 download.</p>
        ${this._hub.render({
          pending: () => html`<p role="status">Reading settings…</p>`,
          error: (e) => html`<p class="error" role="alert">Cannot read settings: ${(e as Error).message}</p>`,
          complete: (h) => this._hubCard(h),
        })}
      </section>
      <section class="card" aria-label="Backend"><hearth-backend-settings></hearth-backend-settings></section>
      <section class="card" aria-label="Engine status"><hearth-engine-status></hearth-engine-status></section>
      <section class="card" aria-label="Bridge"><hearth-bridge-panel></hearth-bridge-panel></section>
    `;
  }
}

declare global {
  interface HTMLElementTagNameMap {
    'hearth-settings': HearthSettings;
  }
}
