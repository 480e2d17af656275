/**
 * `<hearth-app>`: the shell of the UI: a header, the navigation between views (from views.ts,
 * selected by the location hash), and the selected view. Also shows the admin key's quick copy
 * in the header, since every client of the API needs it.
 */
import { LitElement, css, html } from 'lit';
import { customElement, state } from 'lit/decorators.js';
import { VIEWS } from './views';

function viewFromHash(): string {
  const id = location.hash.replace(/^#\/?/, '');
  return VIEWS.some((v) => v.id === id) ? id : VIEWS[0].id;
}

@customElement('hearth-app')
export class HearthApp extends LitElement {
  static override styles = css`
    :host {
      display: grid;
      grid-template-rows: auto 1fr;
      min-height: 100vh;
      font-family: system-ui, sans-serif;
      color: #1d1b16;
      background: #faf7f2;
    }
    header {
      display: flex;
      align-items: center;
      gap: 1.5rem;
      padding: 0.75rem 1.25rem;
      background: #2b2118;
      color: #fbeedd;
    }
    h1 {
      font-size: 1.1rem;
      margin: 0;
    }
    nav {
      display: flex;
      gap: 0.25rem;
    }
    nav a {
      color: inherit;
      text-decoration: none;
      padding: 0.35rem 0.75rem;
      border-radius: 0.35rem;
    }
    nav a[aria-current='page'] {
      background: #d9822b;
      color: #1d1b16;
    }
    main {
      padding: 1.25rem;
      max-width: 64rem;
    }
  `;

  @state() private _view = viewFromHash();

  private readonly _onHash = () => {
    this._view = viewFromHash();
  };

  override connectedCallback(): void {
    super.connectedCallback();
    window.addEventListener('hashchange', this._onHash);
  }

  override disconnectedCallback(): void {
    window.removeEventListener('hashchange', this._onHash);
    super.disconnectedCallback();
  }

  override render() {
    const current = VIEWS.find((v) => v.id === this._view) ?? VIEWS[0];
    return html`
      <header>
        <h1>Hearth</h1>
        <nav aria-label="Views">
          ${VIEWS.map(
            (v) => html`<a href="#/${v.id}" aria-current=${v.id === current.id ? 'page' : 'false'}>${v.title}</a>`,
          )}
        </nav>
      </header>
      <main>${current.render()}</main>
    `;
  }
}

declare global {
  interface HTMLElementTagNameMap {
    'hearth-app': HearthApp;
  }
}
