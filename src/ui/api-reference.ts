/**
 * `<hearth-api-reference>`: every /v1 endpoint (api-endpoints.ts) with a copyable `fetch`
 * example, and an `openai` SDK example where the SDK has the call, written for this origin. The
 * examples use a `key` variable: the admin key (Keys view) or a key created there.
 *
 * Not here: the endpoint behaviour (README "Endpoints", src/api).
 */
import { LitElement, css, html, nothing } from 'lit';
import { customElement, state } from 'lit/decorators.js';
import { ENDPOINTS, fetchExample, openaiExample, type EndpointDoc } from './api-endpoints';
import { shared } from './theme';

@customElement('hearth-api-reference')
export class HearthApiReference extends LitElement {
  static override styles = [
    shared,
    css`
      details {
        border-bottom: 1px solid var(--hearth-border);
        padding: 0.4rem 0;
      }
      summary {
        cursor: pointer;
        display: flex;
        flex-wrap: wrap;
        gap: 0.5rem;
        align-items: baseline;
      }
      summary::before {
        content: '▸';
        color: var(--hearth-muted);
        width: 0.8rem;
      }
      details[open] > summary::before {
        content: '▾';
      }
      .method {
        font-family: var(--hearth-mono);
        font-size: 0.75rem;
        font-weight: 700;
        width: 3.6rem;
        color: var(--hearth-accent);
      }
      .path {
        font-family: var(--hearth-mono);
        font-size: 0.85rem;
        word-break: break-all;
      }
      .example {
        position: relative;
      }
      .example button {
        position: absolute;
        top: 0.35rem;
        right: 0.35rem;
      }
    `,
  ];

  @state() private _copied = '';

  private async _copy(id: string, text: string): Promise<void> {
    await navigator.clipboard.writeText(text);
    this._copied = id;
  }

  private _example(id: string, label: string, code: string) {
    return html`<div class="example">
      <pre aria-label=${label}><code>${code}</code></pre>
      <button @click=${() => this._copy(id, code)} aria-label=${`Copy ${label}`}>${this._copied === id ? 'Copied' : 'Copy'}</button>
    </div>`;
  }

  private _endpoint(e: EndpointDoc, i: number) {
    const origin = location.origin;
    const sdk = openaiExample(e, origin);
    const name = `${e.method} ${e.path}`;
    return html`<details data-endpoint=${name}>
      <summary><span class="method">${e.method}</span><span class="path">${e.path}</span><span class="muted">${e.summary}</span></summary>
      ${this._example(`f${i}`, `fetch example for ${name}`, fetchExample(e, origin))}
      ${sdk ? this._example(`o${i}`, `openai example for ${name}`, sdk) : nothing}
    </details>`;
  }

  override render() {
    const groups = [...new Set(ENDPOINTS.map((e) => e.group))];
    return html`
      <h2>API reference</h2>
      <p>
        Any page of <code>${location.origin}</code> can call these with <code>fetch</code>; scripts elsewhere use the
        <code>openai</code> package with <code>baseURL: '${location.origin}/v1'</code>. Every request needs
        <code>Authorization: Bearer &lt;key&gt;</code> (see Keys). Full details are in the README.
      </p>
      ${groups.map(
        (g) => html`<section class="card" aria-label=${g}>
          <h3>${g}</h3>
          ${ENDPOINTS.map((e, i) => (e.group === g ? this._endpoint(e, i) : nothing))}
        </section>`,
      )}
    `;
  }
}

declare global {
  interface HTMLElementTagNameMap {
    'hearth-api-reference': HearthApiReference;
  }
}
