/**
 * Bearer-key authentication, set once on every /v1 route: resolves the `Authorization` header to
 * a principal (`c.get('principal')`) or answers 401 in the route family's envelope.
 *
 * Not here: keys themselves (src/service/api-keys.ts).
 */
import type { MiddlewareHandler } from 'hono';
import { authenticate } from '../service/api-keys';
import type { AppEnv } from './env';

export function bearerAuth(): MiddlewareHandler<AppEnv> {
  return async function bearerAuth(c, next) {
    const principal = await authenticate(c.get('deps').services.db, c.req.header('Authorization'));
    c.set('principal', principal);
    await next();
  };
}
