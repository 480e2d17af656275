/**
 * How views talk to Hearth: plain `fetch('/v1/...')` through the Service Worker, with the admin
 * key from `globalThis.hearth`. Errors carry the server's message (`detail` or `error.message`).
 * Reads retry once after a dropped connection (the engine host may be moving to another tab);
 * writes are sent once, as ART's client does.
 *
 * Not here: any HTTP semantics (src/api); the UI is just another client.
 */

export class ApiError extends Error {
  override name = 'ApiError';
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** The list envelope every /v1/preview list answers with. */
export interface ListPage<T> {
  object: 'list';
  data: T[];
  has_more: boolean;
  first_id: string | null;
  last_id: string | null;
}

function messageOf(body: unknown, status: number): string {
  const b = body as { detail?: unknown; error?: { message?: string } } | null;
  if (typeof b?.detail === 'string') return b.detail;
  if (Array.isArray(b?.detail))
    return b.detail.map((d: { loc?: unknown[]; msg?: string }) => `${(d.loc ?? []).join('.')}: ${d.msg}`).join('; ');
  if (b?.error?.message) return b.error.message;
  return `HTTP ${status}`;
}

async function authHeaders(): Promise<Record<string, string>> {
  await globalThis.hearth.ready();
  return { Authorization: `Bearer ${await globalThis.hearth.adminKey()}` };
}

async function send(method: string, path: string, init: { body?: BodyInit; json?: unknown; signal?: AbortSignal }): Promise<Response> {
  const headers = await authHeaders();
  let body = init.body;
  if (init.json !== undefined) {
    headers['Content-Type'] = 'application/json';
    body = JSON.stringify(init.json);
  }
  const once = () => fetch(path, { method, headers, body, signal: init.signal });
  try {
    return await once();
  } catch (err) {
    if (method !== 'GET' || init.signal?.aborted) throw err;
    await new Promise((r) => setTimeout(r, 1000));
    return once();
  }
}

/** The ApiError for a failed response, with the server's message. */
export async function apiError(res: Response): Promise<ApiError> {
  return new ApiError(res.status, messageOf(await res.json().catch(() => null), res.status));
}

async function parse<T>(res: Response): Promise<T> {
  if (!res.ok) throw await apiError(res);
  return (await res.json().catch(() => null)) as T;
}

export async function apiGet<T>(path: string, signal?: AbortSignal): Promise<T> {
  return parse<T>(await send('GET', path, { signal }));
}

/** POST / DELETE with a JSON body (or none). */
export async function apiSend<T>(method: 'POST' | 'PATCH' | 'DELETE', path: string, json?: unknown, signal?: AbortSignal): Promise<T> {
  return parse<T>(await send(method, path, { json, signal }));
}

/** POST multipart/form-data: text fields and files (each under `fileField`). */
export async function apiUpload<T>(path: string, fields: Record<string, string>, files: readonly File[], fileField = 'file'): Promise<T> {
  const form = new FormData();
  for (const [k, v] of Object.entries(fields)) form.append(k, v);
  for (const f of files) form.append(fileField, f, f.name);
  return parse<T>(await send('POST', path, { body: form }));
}

/** A binary answer (an adapter zip) with the file name from Content-Disposition. */
export async function apiBlob(path: string): Promise<{ blob: Blob; fileName: string | null }> {
  const res = await send('GET', path, {});
  if (!res.ok) throw new ApiError(res.status, messageOf(await res.json().catch(() => null), res.status));
  const name = /filename="?([^";]+)"?/.exec(res.headers.get('Content-Disposition') ?? '')?.[1] ?? null;
  return { blob: await res.blob(), fileName: name };
}

/** Every item of a list endpoint, page after page (`limit` per page). */
export async function apiGetAll<T extends { id: string }>(path: string, signal?: AbortSignal, limit = 100): Promise<T[]> {
  const out: T[] = [];
  let after: string | undefined;
  for (;;) {
    const sep = path.includes('?') ? '&' : '?';
    const page = await apiGet<ListPage<T>>(`${path}${sep}limit=${limit}${after ? `&after=${encodeURIComponent(after)}` : ''}`, signal);
    out.push(...page.data);
    if (!page.has_more || page.data.length === 0) return out;
    after = page.data[page.data.length - 1].id;
  }
}
