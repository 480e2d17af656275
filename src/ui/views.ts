/**
 * The views the shell's navigation offers (route.ts says how a location hash selects one). A
 * view plugs in by adding one entry here and its component file.
 */
import { html, type TemplateResult } from 'lit';
import { parseRoute, type Route } from './route';
import './chat-playground';
import './models-view';
import './training-view';
import './runs-view';
import './demo-view';
import './keys-view';
import './settings-view';
import './backend-settings';
import './api-reference';
import './bridge-view';

export interface ViewEntry {
  /** Location hash that selects the view: `#/<id>`. */
  id: string;
  title: string;
  render(route: Route): TemplateResult;
}

export const VIEWS: ViewEntry[] = [
  { id: 'chat', title: 'Chat', render: () => html`<hearth-chat-playground></hearth-chat-playground>` },
  { id: 'models', title: 'Models', render: () => html`<hearth-models></hearth-models>` },
  {
    id: 'training',
    title: 'Training',
    render: (r) => html`<hearth-training .jobId=${r.sub} .modelId=${r.query.get('model') ?? ''}></hearth-training>`,
  },
  { id: 'runs', title: 'Runs', render: (r) => html`<hearth-runs .modelId=${r.sub}></hearth-runs>` },
  { id: 'demo', title: 'Demo', render: () => html`<hearth-demo></hearth-demo>` },
  { id: 'keys', title: 'Keys', render: () => html`<hearth-keys></hearth-keys>` },
  { id: 'settings', title: 'Settings', render: () => html`<hearth-settings></hearth-settings>` },
  {
    id: 'bridge',
    title: 'Bridge',
    render: (r) => html`<hearth-bridge .port=${r.query.get('port') ?? ''} .code=${r.query.get('code') ?? ''}></hearth-bridge>`,
  },
  { id: 'api', title: 'API', render: () => html`<hearth-api-reference></hearth-api-reference>` },
];

/** The route a location hash names; an unknown view is the first one. */
export function routeOf(hash: string): Route {
  return parseRoute(
    hash,
    VIEWS.map((v) => v.id),
  );
}
