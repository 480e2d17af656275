/**
 * `<hearth-models>`: the Models view: base models (download, files, remove) and the recommended
 * ones to download in one click, above the caller's registered models (checkpoints, delete,
 * adapters).
 */
import { LitElement, html } from 'lit';
import { customElement } from 'lit/decorators.js';
import { shared } from './theme';
import './base-models-panel';
import './recommended-models';
import './registered-models';

@customElement('hearth-models')
export class HearthModels extends LitElement {
  static override styles = shared;

  override render() {
    return html`<h2>Models</h2>
      <hearth-base-models></hearth-base-models>
      <hearth-recommended-models @download-started=${() => this.renderRoot.querySelector('hearth-base-models')?.refresh()}></hearth-recommended-models>
      <hearth-registered-models></hearth-registered-models>`;
  }
}

declare global {
  interface HTMLElementTagNameMap {
    'hearth-models': HearthModels;
  }
}
