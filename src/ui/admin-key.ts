/**
 * `<hearth-admin-key>`: the admin API key of this browser's Hearth, hidden until revealed, with
 * a copy button, and how to use it from a script or the OpenAI SDK.
 *
 * @fires hearth-copied - after the key was copied to the clipboard
 */
import { LitElement, css, html } from 'lit';
import { customElement, state } from 'lit/decorators.js';
import { Task } from '@lit/task';

@customElement('hearth-admin-key')
export class HearthAdminKey extends LitElement {
  static override styles = css`
    .key {
      display: flex;
      flex-wrap: wrap;
      gap: 0.5rem;
      align-items: center;
    }
    code {
      padding: 0.35rem 0.5rem;
      border-radius: 0.35rem;
      background: var(--hearth-surface-2);
      font-size: 0.9rem;
      word-break: break-all;
    }
    button {
      padding: 0.35rem 0.75rem;
      font: inherit;
      border: 1px solid var(--hearth-border);
      border-radius: 0.35rem;
      background: var(--hearth-surface-2);
      color: var(--hearth-fg);
      cursor: pointer;
    }
    pre {
      background: var(--hearth-surface-2);
      color: var(--hearth-fg);
      white-space: pre-wrap;
      word-break: break-word;
      padding: 0.75rem;
      border-radius: 0.35rem;
      overflow-x: auto;
    }
    button:focus-visible {
      outline: 3px solid var(--hearth-focus);
      outline-offset: 2px;
    }
    h2 {
      font-size: 1rem;
      margin-top: 0;
    }
  `;

  @state() private _revealed = false;
  @state() private _copied = false;

  private readonly _key = new Task(this, {
    task: async () => globalThis.hearth.adminKey(),
    args: () => [],
  });

  private async _copy(key: string): Promise<void> {
    await navigator.clipboard.writeText(key);
    this._copied = true;
    this.dispatchEvent(new CustomEvent('hearth-copied', { bubbles: true, composed: true }));
    setTimeout(() => (this._copied = false), 2000);
  }

  override render() {
    return html`
      <h2>Admin API key</h2>
      <p>Every request to <code>/v1</code> needs <code>Authorization: Bearer &lt;key&gt;</code>. This key is the owner's: it can also create keys for other principals.</p>
      ${this._key.render({
        pending: () => html`<p role="status">Waiting for the engine…</p>`,
        error: (e) => html`<p role="alert">Cannot read the admin key: ${(e as Error).message}</p>`,
        complete: (key) => html`
          <div class="key">
            <code data-field="admin-key">${this._revealed ? key : `${key.slice(0, 8)}${'•'.repeat(24)}`}</code>
            <button @click=${() => (this._revealed = !this._revealed)}>${this._revealed ? 'Hide' : 'Show'}</button>
            <button @click=${() => this._copy(key)} aria-label="Copy admin key">${this._copied ? 'Copied' : 'Copy'}</button>
          </div>
          <pre>const openai = new OpenAI({ baseURL: location.origin + '/v1', apiKey: '&lt;key&gt;' });</pre>
        `,
      })}
    `;
  }
}

declare global {
  interface HTMLElementTagNameMap {
    'hearth-admin-key': HearthAdminKey;
  }
}
