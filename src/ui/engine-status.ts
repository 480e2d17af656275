/**
 * `<hearth-engine-status>`: what the engine runs on: the GPU adapter (or why there is none), its
 * features and limits, the engine state, the job queue and the base models, kept live by the
 * engine status feed.
 */
import { LitElement, css, html, nothing } from 'lit';
import { customElement } from 'lit/decorators.js';
import { EngineFeed } from './engine-feed';

function formatLimit(n: number): string {
  if (n >= 2 ** 30 && n % 2 ** 20 === 0) return `${(n / 2 ** 30).toFixed(n % 2 ** 30 ? 2 : 0)} GiB`;
  if (n >= 2 ** 20 && n % 2 ** 10 === 0) return `${(n / 2 ** 20).toFixed(n % 2 ** 20 ? 2 : 0)} MiB`;
  return n.toLocaleString('en-US');
}

@customElement('hearth-engine-status')
export class HearthEngineStatus extends LitElement {
  static override styles = css`
    section {
      margin-bottom: 1.25rem;
    }
    h2 {
      font-size: 1rem;
      margin: 0.9rem 0 0.4rem;
    }
    dl {
      display: grid;
      grid-template-columns: minmax(0, max-content) minmax(0, 1fr);
      gap: 0.25rem 1rem;
      margin: 0;
    }
    dt {
      color: var(--hearth-muted);
      overflow-wrap: anywhere;
    }
    dd {
      margin: 0;
      font-family: var(--hearth-mono, ui-monospace, monospace);
      overflow-wrap: anywhere;
    }
    .chips {
      display: flex;
      flex-wrap: wrap;
      gap: 0.35rem;
    }
    .chip {
      padding: 0.1rem 0.5rem;
      border-radius: 1rem;
      background: var(--hearth-surface-2);
      font-family: ui-monospace, monospace;
      font-size: 0.85rem;
    }
    .warn {
      padding: 0.75rem;
      border-radius: 0.35rem;
      background: var(--hearth-warn-bg);
    }
  `;

  private readonly _feed = new EngineFeed(this);

  override render() {
    const s = this._feed.status;
    if (!s) {
      return html`<p role="status">${this._feed.error ? `Waiting for the engine: ${this._feed.error}` : 'Connecting to the engine…'}</p>`;
    }
    return html`
      <section aria-label="Engine">
        <h2>Engine</h2>
        <dl>
          <dt>State</dt>
          <dd data-field="state">${s.state}</dd>
          <dt>Started</dt>
          <dd>${new Date(s.started_at).toLocaleString()}</dd>
          <dt>Jobs</dt>
          <dd data-field="jobs">${s.jobs.running ? `running ${s.jobs.running}, ` : s.jobs.training ? "training another key's job, " : ''}${s.jobs.pending} queued</dd>
        </dl>
      </section>
      <section aria-label="GPU">
        <h2>GPU</h2>
        ${
          s.gpu
            ? html`
              <dl>
                <dt>Adapter</dt>
                <dd data-field="adapter">
                  ${
                    [s.gpu.adapter.vendor, s.gpu.adapter.architecture, s.gpu.adapter.device, s.gpu.adapter.description]
                      .filter(Boolean)
                      .join(' · ') || 'unnamed adapter'
                  }
                  ${s.gpu.adapter.isSoftware ? html` (software: correct but slow)` : nothing}
                </dd>
              </dl>
              <h2>Features</h2>
              <div class="chips" data-field="features">${s.gpu.features.map((f) => html`<span class="chip">${f}</span>`)}</div>
              <h2>Limits</h2>
              <dl data-field="limits">
                ${Object.entries(s.gpu.limits).map(([k, v]) => html`<dt>${k}</dt><dd>${formatLimit(v)}</dd>`)}
              </dl>
            `
            : html`<p class="warn" data-field="gpu-error">
              ${s.gpu_status === 'acquiring' ? 'Acquiring the GPU…' : `No GPU: ${s.gpu_error}`}
            </p>`
        }
      </section>
      <section aria-label="Base models">
        <h2>Base models</h2>
        <dl>
          ${s.base_models.map(
            (m) => html`<dt>${m.id}${m.default ? ' (default)' : ''}</dt>
              <dd>${m.architecture}, ${(m.parameters / 1e6).toFixed(1)}M parameters</dd>`,
          )}
        </dl>
      </section>
    `;
  }
}

declare global {
  interface HTMLElementTagNameMap {
    'hearth-engine-status': HearthEngineStatus;
  }
}
