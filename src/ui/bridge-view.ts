/**
 * `<hearth-bridge>` (#/bridge?port=8787&code=XXXX-XXXX, the link `npm run bridge` prints): says
 * what connecting means and pairs this app with the bridge on Connect. Without a code it says
 * how to start the bridge.
 *
 * Not here: the link itself (bridge-link.ts); its status and Disconnect live in Settings too
 * (bridge-panel.ts).
 */
import { LitElement, html } from 'lit';
import { customElement, property, state } from 'lit/decorators.js';
import { BridgeStatusController, bridgeLink } from './bridge-link';
import { shared } from './theme';
import './bridge-panel';

@customElement('hearth-bridge')
export class HearthBridge extends LitElement {
  static override styles = [shared];

  /** The bridge's port, from the pairing link. */
  @property() port = '';
  /** The one-time pairing code, from the pairing link. */
  @property() code = '';

  @state() private _busy = false;
  @state() private _error = '';
  private readonly _link = new BridgeStatusController(this);

  private async _connect(): Promise<void> {
    this._busy = true;
    this._error = '';
    try {
      await bridgeLink.pair(Number(this.port), this.code);
      // The code is spent: a reload of this address must not try it again.
      history.replaceState(null, '', '#/bridge');
      this.code = '';
    } catch (err) {
      this._error = (err as Error).message;
    } finally {
      this._busy = false;
    }
  }

  override render() {
    const linked = this._link.status;
    const port = this.code ? Number(this.port) : (linked.port ?? NaN);
    const known = Number.isInteger(port) && port > 0 && port < 65536;
    const canPair = known && this.code !== '';
    return html`
      <h2>Bridge</h2>
      <section class="card" aria-labelledby="what">
        <h3 id="what">Use Hearth from programs on this computer</h3>
        <p>
          Connecting lets programs on this computer (Python scripts with the <code>openai</code> SDK, curl, notebooks,
          OpenPipe ART) use Hearth at <code>http://127.0.0.1:${known ? port : '<port>'}/v1</code>, with their own API keys.
        </p>
        <p class="muted">
          The bridge is a small program that relays their requests to this tab, which sends each one to Hearth exactly as
          the app's own pages do: every request still needs a key, and keys, limits and errors are unchanged. It listens on
          127.0.0.1 only and refuses other web pages. Keep a tab of Hearth open while they run; this tab reconnects by
          itself after a reload until you press Disconnect in Settings.
        </p>
        ${
          canPair
            ? html`<div class="row">
                <button class="primary" ?disabled=${this._busy} @click=${() => this._connect()}>Connect</button>
                <span class="muted">to the bridge on port ${port}</span>
              </div>`
            : linked.state === 'off'
              ? html`<p>Start the bridge with <code>npm run bridge</code> (or <code>npx hearth-bridge</code>) and open the link it prints.</p>`
              : html`<p>This app is paired with the bridge on port ${linked.port}.</p>`
        }
        ${this._error ? html`<p class="error" role="alert" data-field="bridge-error">${this._error}</p>` : ''}
      </section>
      ${linked.state === 'off' && !this.code ? '' : html`<section class="card"><hearth-bridge-panel></hearth-bridge-panel></section>`}
    `;
  }
}

declare global {
  interface HTMLElementTagNameMap {
    'hearth-bridge': HearthBridge;
  }
}
