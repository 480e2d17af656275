/**
 * `<hearth-model-checkpoints>`: one registered model's checkpoints: step, metrics, time; download
 * one as a PEFT adapter zip or as a GGUF LoRA adapter for llama.cpp; delete chosen steps. The
 * `model` property is the model (from the list in registered-models.ts); it fires `hearth-changed`
 * after a deletion.
 *
 * Not here: the model list, deleting the whole model (registered-models.ts).
 */
import { LitElement, css, html, nothing } from 'lit';
import { customElement, property, state } from 'lit/decorators.js';
import { Task, TaskStatus } from '@lit/task';
import { apiBlob, apiGetAll, apiSend } from './api-client';
import { formatMetric, formatTime } from './format';
import { shared } from './theme';
import type { Checkpoint, Model } from './types';

@customElement('hearth-model-checkpoints')
export class HearthModelCheckpoints extends LitElement {
  static override styles = [
    shared,
    css`
      .metrics {
        display: flex;
        flex-wrap: wrap;
        gap: 0.25rem 0.75rem;
        font-size: 0.8rem;
      }
      .metrics span {
        white-space: nowrap;
      }
    `,
  ];

  @property({ attribute: false }) model!: Model;
  @state() private _selected = new Set<number>();
  @state() private _error = '';

  private readonly _checkpoints = new Task(this, {
    task: async ([id], { signal }) => apiGetAll<Checkpoint>(`/v1/preview/models/${encodeURIComponent(id)}/checkpoints?order=asc`, signal),
    args: () => [this.model.id] as const,
  });

  private async _download(step: number, format: 'peft' | 'gguf'): Promise<void> {
    this._error = '';
    try {
      const query = format === 'gguf' ? '?format=gguf' : '';
      const { blob, fileName } = await apiBlob(
        `/v1/preview/models/${encodeURIComponent(this.model.id)}/checkpoints/${step}/adapter${query}`,
      );
      const a = document.createElement('a');
      a.href = URL.createObjectURL(blob);
      a.download = fileName ?? `${this.model.name}-step${step}-adapter.${format === 'gguf' ? 'gguf' : 'zip'}`;
      a.click();
      setTimeout(() => URL.revokeObjectURL(a.href), 10_000);
    } catch (err) {
      this._error = (err as Error).message;
    }
  }

  private async _delete(): Promise<void> {
    const steps = [...this._selected].sort((a, b) => a - b);
    if (
      !confirm(
        `Delete ${steps.length === 1 ? 'checkpoint' : 'checkpoints'} ${steps.map((s) => `step ${s}`).join(', ')} of ${this.model.name}? Their LoRA adapters are deleted; the model and its other checkpoints stay.`,
      )
    )
      return;
    try {
      await apiSend('DELETE', `/v1/preview/models/${encodeURIComponent(this.model.id)}/checkpoints`, { steps });
      this._selected = new Set();
      void this._checkpoints.run();
      this.dispatchEvent(new CustomEvent('hearth-changed', { bubbles: true, composed: true }));
    } catch (err) {
      this._error = (err as Error).message;
    }
  }

  private _toggle(step: number, on: boolean): void {
    const next = new Set(this._selected);
    if (on) next.add(step);
    else next.delete(step);
    this._selected = next;
  }

  override render() {
    // While re-reading (after a deletion) the previous list stays up.
    const cps = this._checkpoints.value;
    return html`
      ${
        this._checkpoints.status === TaskStatus.ERROR
          ? html`<p class="error" role="alert">Cannot list checkpoints: ${(this._checkpoints.error as Error).message}</p>`
          : !cps
            ? html`<p role="status">Loading checkpoints…</p>`
            : html`
          <div class="table-wrap">
            <table aria-label=${`Checkpoints of ${this.model.name}`}>
              <thead><tr><th><span class="visually-hidden">Select</span></th><th>Step</th><th>Metrics</th><th>Created</th><th><span class="visually-hidden">Actions</span></th></tr></thead>
              <tbody>
                ${cps.map(
                  (c) => html`<tr data-step=${c.step}>
                    <td><input type="checkbox" aria-label=${`Select step ${c.step}`} .checked=${this._selected.has(c.step)} @change=${(e: Event) => this._toggle(c.step, (e.target as HTMLInputElement).checked)} /></td>
                    <td>${c.step}</td>
                    <td><div class="metrics">${Object.entries(c.metrics).length ? Object.entries(c.metrics).map(([k, v]) => html`<span><span class="muted">${k}</span> ${formatMetric(v)}</span>`) : html`<span class="muted">none</span>`}</div></td>
                    <td>${formatTime(c.created_at)}</td>
                    <td><div class="row">
                      <button @click=${() => this._download(c.step, 'peft')} aria-label=${`Download step ${c.step} as a PEFT adapter`}>Adapter zip</button>
                      <button @click=${() => this._download(c.step, 'gguf')} aria-label=${`Download step ${c.step} as a GGUF adapter for llama.cpp`}>GGUF</button>
                    </div></td>
                  </tr>`,
                )}
              </tbody>
            </table>
          </div>
          <div class="row" style="margin-top:0.5rem">
            <button class="danger" ?disabled=${this._selected.size === 0} @click=${this._delete}>Delete selected checkpoints</button>
          </div>
        `
      }
      ${this._error ? html`<p class="error" role="alert">${this._error}</p>` : nothing}
    `;
  }
}

declare global {
  interface HTMLElementTagNameMap {
    'hearth-model-checkpoints': HearthModelCheckpoints;
  }
}
