/**
 * `<hearth-bridge-panel>`: the loopback bridge in Settings: connected or not (and which tab of
 * the app relays), the port, requests served and in flight, and Disconnect.
 *
 * Not here: pairing (bridge-view.ts), the link itself (bridge-link.ts).
 */
import { LitElement, css, html } from 'lit';
import { customElement } from 'lit/decorators.js';
import { BridgeStatusController, bridgeLink, type BridgeStatus } from './bridge-link';
import { shared } from './theme';

const STATE_TEXT: Record<BridgeStatus['state'], string> = {
  off: 'Not connected.',
  connecting: 'Connecting…',
  connected: 'Connected: this tab relays requests from programs on this computer.',
  elsewhere: 'Paired: another tab of Hearth relays requests (this one takes over when it closes).',
  retrying: 'Paired, but the bridge does not answer.',
};

@customElement('hearth-bridge-panel')
export class HearthBridgePanel extends LitElement {
  static override styles = [
    shared,
    css`
      table {
        margin-bottom: 0.75rem;
      }
    `,
  ];

  private readonly _link = new BridgeStatusController(this);

  override render() {
    const s = this._link.status;
    const base = s.port === null ? '' : `http://127.0.0.1:${s.port}/v1`;
    return html`
      <h3 id="bridge">Bridge</h3>
      <p data-field="bridge-state" data-state=${s.state}>${STATE_TEXT[s.state]}${s.message ? html` <span class="muted">${s.message}</span>` : ''}</p>
      ${
        s.state === 'off'
          ? html`<p class="muted">Programs on this computer (Python, curl, OpenPipe ART) reach Hearth through <code>npm run bridge</code>: start it and open the link it prints (<a href="#/bridge">Bridge</a>).</p>`
          : html`
              <table>
                <tbody>
                  <tr><td>Base URL</td><td data-field="bridge-port" data-port=${s.port ?? ''}><code>${base}</code></td></tr>
                  <tr><td>Requests served</td><td data-field="bridge-served">${s.served}</td></tr>
                  <tr><td>In flight</td><td data-field="bridge-in-flight">${s.inFlight}</td></tr>
                </tbody>
              </table>
              <div class="row"><button class="danger" @click=${() => bridgeLink.disconnect()}>Disconnect</button></div>
            `
      }
    `;
  }
}

declare global {
  interface HTMLElementTagNameMap {
    'hearth-bridge-panel': HearthBridgePanel;
  }
}
