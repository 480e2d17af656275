/**
 * Where a Hugging Face access token may go: only to the hub (https://huggingface.co) or to the
 * mirror the admin configured, as `Authorization: Bearer <token>`, so gated repositories (Llama
 * 3.2) download. A download from any other server (a URL source, a one-off mirror) never sees it.
 * Redirects to the hub's CDN do not carry it either: fetch drops Authorization on a cross-origin
 * redirect (Fetch standard, "HTTP-redirect fetch"), and the CDN's URLs are signed.
 *
 * Not here: where the token is kept (store/settings.ts), the settings route.
 */

/** The hub's base URL, where repo ids resolve by default. */
export const HUB_BASE = 'https://huggingface.co';

export interface HubCredentials {
  token: string;
  /** The configured mirror's base URL, or null for the hub alone. */
  mirror: string | null;
}

function originOf(url: string): string | null {
  try {
    return new URL(url).origin;
  } catch {
    return null;
  }
}

/** The request headers for files under `baseUrl`: the token when its origin is the hub's or the mirror's. */
export function hubHeaders(baseUrl: string, credentials: HubCredentials | null): Record<string, string> | undefined {
  if (!credentials?.token) return undefined;
  const target = originOf(baseUrl);
  const allowed = [originOf(HUB_BASE), credentials.mirror ? originOf(credentials.mirror) : null];
  if (target === null || !allowed.includes(target)) return undefined;
  return { Authorization: `Bearer ${credentials.token}` };
}
