/**
 * The styles every view shares: cards, buttons, forms, tables, status pills, focus rings, all
 * from the palette's custom properties (index.html), so light and dark follow the system in one
 * place. A view adds `shared` to its own `static styles`.
 *
 * Not here: the palette itself (index.html) or any view's layout.
 */
import { css } from 'lit';

export const shared = css`
  :host {
    display: block;
    color: var(--hearth-fg);
    font-family: var(--hearth-font, system-ui, sans-serif);
  }
  h2 {
    font-size: 1.25rem;
    margin: 0 0 0.75rem;
  }
  h3 {
    font-size: 1rem;
    margin: 1rem 0 0.5rem;
  }
  p {
    line-height: 1.5;
  }
  .card {
    background: var(--hearth-surface);
    border: 1px solid var(--hearth-border);
    border-radius: 0.6rem;
    padding: 1rem 1.1rem;
    margin-bottom: 1rem;
  }
  .muted {
    color: var(--hearth-muted);
  }
  .row {
    display: flex;
    flex-wrap: wrap;
    gap: 0.5rem;
    align-items: center;
  }
  .spread > :is(h2, h3) {
    margin: 0;
  }
  .spread {
    display: flex;
    flex-wrap: wrap;
    gap: 0.5rem;
    align-items: center;
    justify-content: space-between;
  }
  button,
  .button {
    font: inherit;
    font-size: 0.9rem;
    padding: 0.4rem 0.85rem;
    border-radius: 0.4rem;
    border: 1px solid var(--hearth-border);
    background: var(--hearth-surface-2);
    color: var(--hearth-fg);
    cursor: pointer;
    text-decoration: none;
    display: inline-block;
  }
  button.primary {
    background: var(--hearth-accent);
    border-color: var(--hearth-accent);
    color: var(--hearth-accent-fg);
  }
  button.danger {
    color: var(--hearth-danger);
    border-color: var(--hearth-danger);
    background: transparent;
  }
  button:disabled {
    opacity: 0.55;
    cursor: not-allowed;
  }
  :is(button, a, input, select, textarea, summary, [tabindex]):focus-visible {
    outline: 3px solid var(--hearth-focus);
    outline-offset: 2px;
  }
  a {
    color: var(--hearth-accent);
  }
  label {
    display: grid;
    gap: 0.25rem;
    font-size: 0.9rem;
  }
  input,
  select,
  textarea {
    font: inherit;
    padding: 0.4rem 0.5rem;
    border-radius: 0.4rem;
    border: 1px solid var(--hearth-border);
    background: var(--hearth-bg);
    color: var(--hearth-fg);
    min-width: 0;
  }
  form.grid {
    display: grid;
    grid-template-columns: repeat(auto-fit, minmax(12rem, 1fr));
    gap: 0.75rem;
    align-items: end;
  }
  .table-wrap {
    overflow-x: auto;
    position: relative;
  }
  table {
    border-collapse: collapse;
    width: 100%;
    font-size: 0.9rem;
  }
  th,
  td {
    text-align: left;
    padding: 0.4rem 0.5rem;
    border-bottom: 1px solid var(--hearth-border);
    vertical-align: top;
  }
  th {
    color: var(--hearth-muted);
    font-weight: 600;
  }
  code,
  pre {
    font-family: var(--hearth-mono, ui-monospace, monospace);
    font-size: 0.85rem;
  }
  pre {
    background: var(--hearth-surface-2);
    padding: 0.75rem;
    border-radius: 0.4rem;
    overflow-x: auto;
    white-space: pre-wrap;
    word-break: break-word;
  }
  .pill {
    display: inline-block;
    padding: 0.05rem 0.55rem;
    border-radius: 1rem;
    font-size: 0.8rem;
    background: var(--hearth-surface-2);
  }
  .pill.ok {
    color: var(--hearth-ok);
  }
  .pill.bad {
    color: var(--hearth-danger);
  }
  .error {
    padding: 0.6rem 0.8rem;
    border-radius: 0.4rem;
    background: var(--hearth-danger-bg);
    color: var(--hearth-fg);
  }
  .notice {
    padding: 0.6rem 0.8rem;
    border-radius: 0.4rem;
    background: var(--hearth-warn-bg);
  }
  progress {
    width: 100%;
    accent-color: var(--hearth-accent);
  }
  /* Cards side by side, as many as fit: each at least --tile-min wide, --tile-gap apart. */
  .tiles {
    display: grid;
    grid-template-columns: repeat(auto-fit, minmax(var(--tile-min, 16rem), 1fr));
    gap: var(--tile-gap, 0.75rem);
  }
  .charts {
    display: grid;
    grid-template-columns: repeat(auto-fit, minmax(18rem, 1fr));
    gap: 0.75rem;
  }
  .visually-hidden {
    position: absolute;
    width: 1px;
    height: 1px;
    overflow: hidden;
    clip-path: inset(50%);
    white-space: nowrap;
    top: 0;
    left: 0;
  }
`;

/** A status pill's class for a training-job or download status. */
export function statusClass(status: string): string {
  if (/COMPLETED|cached|ready/i.test(status)) return 'pill ok';
  if (/FAILED|error/i.test(status)) return 'pill bad';
  return 'pill';
}
