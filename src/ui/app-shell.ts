/**
 * `<hearth-app>`: the shell of the UI: a header with the navigation between views (views.ts,
 * selected by the location hash, with arrow-key movement along the links), the engine
 * connection state (it follows the engine status feed, which reconnects by itself when the
 * engine host moves to another tab), the WebGPU notice when the browser cannot run the engine,
 * and the selected view. Clicking the link of the view already shown makes it afresh, so it
 * re-reads what it shows. Narrow windows get a wrapping navigation.
 *
 * Not here: any view's content (one component per view, listed in views.ts).
 */
import { LitElement, css, html } from 'lit';
import { customElement, state } from 'lit/decorators.js';
import { keyed } from 'lit/directives/keyed.js';
import { EngineFeed } from './engine-feed';
import { VIEWS, routeOf } from './views';
import './gpu-notice';

@customElement('hearth-app')
export class HearthApp extends LitElement {
  static override styles = css`
    :host {
      display: grid;
      grid-template-rows: auto auto 1fr;
      grid-template-columns: minmax(0, 1fr);
      min-height: 100vh;
      font-family: var(--hearth-font, system-ui, sans-serif);
      color: var(--hearth-fg);
      background: var(--hearth-bg);
    }
    .skip {
      position: absolute;
      left: -999px;
    }
    .skip:focus {
      left: 0.5rem;
      top: 0.5rem;
      z-index: 10;
      background: var(--hearth-surface);
      color: var(--hearth-fg);
      padding: 0.4rem 0.6rem;
      border-radius: 0.35rem;
    }
    header {
      display: flex;
      flex-wrap: wrap;
      align-items: center;
      gap: 0.5rem 1.25rem;
      padding: 0.6rem 1.25rem;
      background: var(--hearth-header-bg);
      color: var(--hearth-header-fg);
    }
    h1 {
      font-size: 1.1rem;
      margin: 0;
      display: flex;
      align-items: center;
      gap: 0.4rem;
    }
    nav {
      flex: 1;
      min-width: 0;
      overflow-x: auto;
    }
    nav ul {
      display: flex;
      gap: 0.15rem;
      list-style: none;
      margin: 0;
      padding: 0;
    }
    nav a {
      display: block;
      color: inherit;
      text-decoration: none;
      padding: 0.35rem 0.7rem;
      border-radius: 0.35rem;
      white-space: nowrap;
    }
    nav a:hover {
      background: rgb(255 255 255 / 0.08);
    }
    nav a[aria-current='page'] {
      background: var(--hearth-accent);
      color: var(--hearth-accent-fg);
    }
    a:focus-visible {
      outline: 3px solid var(--hearth-focus);
      outline-offset: 2px;
    }
    .conn {
      font-size: 0.8rem;
      display: flex;
      align-items: center;
      gap: 0.35rem;
      opacity: 0.9;
    }
    .dot {
      width: 0.55rem;
      height: 0.55rem;
      border-radius: 50%;
      background: #d4a72c;
    }
    .dot.ok {
      background: #4cc38a;
    }
    main {
      padding: 1.25rem;
      max-width: 72rem;
      width: 100%;
      box-sizing: border-box;
      margin: 0 auto;
      min-width: 0;
    }
    @media (max-width: 40rem) {
      header {
        padding: 0.5rem 0.75rem;
      }
      main {
        padding: 0.75rem;
      }
      nav {
        flex-basis: 100%;
        order: 3;
      }
      nav ul {
        flex-wrap: wrap;
      }
    }
  `;

  @state() private _route = routeOf(location.hash);
  /** Bumped when the link of the view already shown is clicked: the view is made afresh (re-read). */
  @state() private _generation = 0;
  private readonly _engine = new EngineFeed(this);

  private readonly _onHash = () => {
    this._route = routeOf(location.hash);
  };

  override connectedCallback(): void {
    super.connectedCallback();
    window.addEventListener('hashchange', this._onHash);
  }

  override disconnectedCallback(): void {
    window.removeEventListener('hashchange', this._onHash);
    super.disconnectedCallback();
  }

  private _navClick(id: string): void {
    if (id === this._route.view && !this._route.sub) this._generation++;
  }

  /** Arrow keys, Home and End move focus along the navigation links (Tab still works). */
  private _navKeys(e: KeyboardEvent): void {
    const links = [...this.renderRoot.querySelectorAll<HTMLAnchorElement>('nav a')];
    const at = links.indexOf(e.target as HTMLAnchorElement);
    if (at < 0) return;
    const next = { ArrowRight: at + 1, ArrowDown: at + 1, ArrowLeft: at - 1, ArrowUp: at - 1, Home: 0, End: links.length - 1 }[e.key];
    if (next === undefined) return;
    e.preventDefault();
    links[(next + links.length) % links.length].focus();
  }

  private _connection() {
    const s = this._engine.status;
    const ok = !!s && !this._engine.error;
    const text = ok ? `Engine ${s.state}` : this._engine.error ? 'Reconnecting to the engine…' : 'Connecting…';
    return html`<div class="conn" role="status" data-field="connection" data-state=${ok ? 'connected' : 'reconnecting'}><span class=${ok ? 'dot ok' : 'dot'}></span>${text}</div>`;
  }

  override render() {
    const current = VIEWS.find((v) => v.id === this._route.view) ?? VIEWS[0];
    return html`
      <a class="skip" href="#main" @click=${(e: Event) => {
        e.preventDefault();
        this.renderRoot.querySelector<HTMLElement>('main')?.focus();
      }}>Skip to content</a>
      <header>
        <h1><img src="/favicon.svg" alt="" width="22" height="22" /> Hearth</h1>
        <nav aria-label="Views" @keydown=${this._navKeys}>
          <ul>
            ${VIEWS.map((v) => html`<li><a href="#/${v.id}" aria-current=${v.id === current.id ? 'page' : 'false'} @click=${() => this._navClick(v.id)}>${v.title}</a></li>`)}
          </ul>
        </nav>
        ${this._connection()}
      </header>
      <hearth-gpu-notice .status=${this._engine.status}></hearth-gpu-notice>
      <main id="main" tabindex="-1">${keyed(`${current.id}:${this._generation}`, current.render(this._route))}</main>
    `;
  }
}

declare global {
  interface HTMLElementTagNameMap {
    'hearth-app': HearthApp;
  }
}
