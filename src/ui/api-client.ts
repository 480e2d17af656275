/**
 * How views talk to Hearth: plain `fetch('/v1/...')` through the Service Worker, with the admin
 * key from `globalThis.hearth`. Errors carry the server's message (`detail` or `error.message`).
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

function messageOf(body: unknown, status: number): string {
  const b = body as { detail?: unknown; error?: { message?: string } } | null;
  if (typeof b?.detail === 'string') return b.detail;
  if (Array.isArray(b?.detail)) return b.detail.map((d: { loc?: unknown[]; msg?: string }) => `${(d.loc ?? []).join('.')}: ${d.msg}`).join('; ');
  if (b?.error?.message) return b.error.message;
  return `HTTP ${status}`;
}

export async function apiGet<T>(path: string, signal?: AbortSignal): Promise<T> {
  await globalThis.hearth.ready();
  const key = await globalThis.hearth.adminKey();
  const res = await fetch(path, { headers: { Authorization: `Bearer ${key}` }, signal });
  const body = await res.json().catch(() => null);
  if (!res.ok) throw new ApiError(res.status, messageOf(body, res.status));
  return body as T;
}
