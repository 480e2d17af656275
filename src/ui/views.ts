/**
 * The views the shell's navigation offers. A later view (chat, training jobs, models) plugs in by
 * adding one entry here and its component file; the shell needs no change.
 */
import { html, type TemplateResult } from 'lit';
import './engine-status';
import './admin-key';
import './chat-playground';

export interface ViewEntry {
  /** Location hash that selects the view: `#/<id>`. */
  id: string;
  title: string;
  render(): TemplateResult;
}

export const VIEWS: ViewEntry[] = [
  {
    id: 'engine',
    title: 'Engine',
    render: () => html`<hearth-engine-status></hearth-engine-status>`,
  },
  {
    id: 'chat',
    title: 'Chat',
    render: () => html`<hearth-chat-playground></hearth-chat-playground>`,
  },
  {
    id: 'keys',
    title: 'API key',
    render: () => html`<hearth-admin-key></hearth-admin-key>`,
  },
];
