/**
 * `<hearth-keys>`: API keys. The admin key of this browser (hidden until shown), keys for other
 * principals created with a name (the secret is shown once, with a copy button, and never again:
 * the server keeps only its hash), the list of keys with their prefixes, and revoking one.
 *
 * Not here: the engine and storage (settings-view.ts), the endpoint reference (api-reference.ts).
 */
import { LitElement, css, html, nothing } from 'lit';
import { customElement, state } from 'lit/decorators.js';
import { Task } from '@lit/task';
import { apiGet, apiSend, type ListPage } from './api-client';
import { formatTime } from './format';
import { shared } from './theme';
import type { ApiKey } from './types';
import './admin-key';

@customElement('hearth-keys')
export class HearthKeys extends LitElement {
  static override styles = [
    shared,
    css`
      .secret {
        display: flex;
        flex-wrap: wrap;
        gap: 0.5rem;
        align-items: center;
      }
      .secret code {
        padding: 0.35rem 0.5rem;
        background: var(--hearth-surface-2);
        border-radius: 0.35rem;
        word-break: break-all;
      }
    `,
  ];

  @state() private _created: ApiKey | undefined;
  @state() private _copied = false;
  @state() private _error = '';
  @state() private _busy = false;

  private readonly _keys = new Task(this, {
    task: async (_args, { signal }) => (await apiGet<ListPage<ApiKey>>('/v1/preview/api-keys', signal)).data,
    args: () => [],
  });

  private async _create(e: SubmitEvent): Promise<void> {
    e.preventDefault();
    const form = e.target as HTMLFormElement;
    const data = new FormData(form);
    const name = String(data.get('name') ?? '').trim();
    const entity = String(data.get('entity') ?? '').trim();
    this._busy = true;
    this._error = '';
    try {
      this._created = await apiSend<ApiKey>('POST', '/v1/preview/api-keys', { name, ...(entity ? { entity } : {}) });
      this._copied = false;
      form.reset();
      void this._keys.run();
    } catch (err) {
      this._error = (err as Error).message;
    } finally {
      this._busy = false;
    }
  }

  private async _revoke(k: ApiKey): Promise<void> {
    if (!confirm(`Revoke the key "${k.name}" (${k.prefix ?? k.id})? Clients using it get 401 from now on.`)) return;
    try {
      await apiSend('DELETE', `/v1/preview/api-keys/${encodeURIComponent(k.id)}`);
      if (this._created?.id === k.id) this._created = undefined;
      void this._keys.run();
    } catch (err) {
      this._error = (err as Error).message;
    }
  }

  private async _copy(secret: string): Promise<void> {
    await navigator.clipboard.writeText(secret);
    this._copied = true;
  }

  private _table(keys: ApiKey[]) {
    return html`
            <div class="table-wrap">
              <table>
                <thead><tr><th>Name</th><th>Entity</th><th>Prefix</th><th>Created</th><th><span class="visually-hidden">Actions</span></th></tr></thead>
                <tbody>
                  ${keys.map(
                    (k) => html`<tr data-key=${k.name}>
                      <td>${k.name}${k.admin ? html` <span class="pill">admin</span>` : nothing}</td>
                      <td>${k.entity ?? ''}</td>
                      <td><code>${k.prefix ?? ''}…</code></td>
                      <td>${formatTime(k.created_at)}</td>
                      <td>${k.admin ? nothing : html`<button class="danger" @click=${() => this._revoke(k)} aria-label=${`Revoke ${k.name}`}>Revoke</button>`}</td>
                    </tr>`,
                  )}
                </tbody>
              </table>
            </div>
`;
  }

  override render() {
    return html`
      <h2>API keys</h2>
      <section class="card" aria-label="Admin key"><hearth-admin-key></hearth-admin-key></section>
      <section class="card" aria-labelledby="new-key">
        <h3 id="new-key">Create a key</h3>
        <p class="muted">A key belongs to a new principal: its models, jobs and logs are its own.</p>
        <form class="grid" @submit=${this._create}>
          <label>Name <input name="name" required maxlength="64" placeholder="my-agent" /></label>
          <label>Entity (optional) <input name="entity" maxlength="64" placeholder="defaults to the name" /></label>
          <div><button class="primary" type="submit" ?disabled=${this._busy}>Create key</button></div>
        </form>
        ${this._error ? html`<p class="error" role="alert">${this._error}</p>` : nothing}
        ${
          this._created?.key
            ? html`<div class="notice" role="status" data-field="new-secret">
              <p>Copy the secret of <strong>${this._created.name}</strong> now: it is shown only once.</p>
              <div class="secret">
                <code data-field="secret">${this._created.key}</code>
                <button @click=${() => this._copy(this._created!.key!)} aria-label="Copy new key">${this._copied ? 'Copied' : 'Copy'}</button>
                <button @click=${() => (this._created = undefined)}>Done</button>
              </div>
            </div>`
            : nothing
        }
      </section>
      <section class="card" aria-labelledby="key-list">
        <h3 id="key-list">Keys</h3>
        ${this._keys.render({
          pending: () => (this._keys.value ? this._table(this._keys.value) : html`<p role="status">Loading keys…</p>`),
          error: (e) => html`<p class="error" role="alert">Cannot list keys: ${(e as Error).message}</p>`,
          complete: (keys) => this._table(keys),
        })}
      </section>
    `;
  }
}

declare global {
  interface HTMLElementTagNameMap {
    'hearth-keys': HearthKeys;
  }
}
