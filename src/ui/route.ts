/**
 * How a location hash selects a view: `#/<view id>[/<sub id>][?query]`, e.g. `#/training/<job id>`,
 * `#/runs/<model id>`, `#/training?model=<model id>`. Pure; the shell passes the known view ids.
 */

export interface Route {
  view: string;
  /** The path segment after the view id (a job or model id), or ''. */
  sub: string;
  query: URLSearchParams;
}

/** The route a hash names; an unknown view id is the first of `viewIds`, with no sub or query. */
export function parseRoute(hash: string, viewIds: readonly string[]): Route {
  const raw = hash.replace(/^#\/?/, '');
  const q = raw.indexOf('?');
  const path = q < 0 ? raw : raw.slice(0, q);
  const [view = '', ...rest] = path.split('/');
  if (!viewIds.includes(view)) return { view: viewIds[0], sub: '', query: new URLSearchParams() };
  return { view, sub: decodeURIComponent(rest.join('/')), query: new URLSearchParams(q < 0 ? '' : raw.slice(q + 1)) };
}
