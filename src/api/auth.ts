/**
 * Bearer-key authentication, set once on every /v1 route: resolves the `Authorization` header to
 * a principal (`c.get('principal')`) or answers 401 in the route family's envelope.
 *
 * Also the admin-only guard for shared state.
 *
 * Not here: keys themselves (src/service/api-keys.ts).
 */
import type { MiddlewareHandler } from 'hono';
import { authenticate } from '../service/api-keys';
import { ForbiddenError } from '../service/errors';
import type { AppEnv } from './env';

export function bearerAuth(): MiddlewareHandler<AppEnv> {
  return async function bearerAuth(c, next) {
    const principal = await authenticate(c.get('deps').services.db, c.req.header('Authorization'));
    c.set('principal', principal);
    await next();
  };
}

/**
 * Refuses every key but the admin's with 403 (in the route family's envelope): for state all
 * principals share, such as the base-model catalogue (issue 10, item 4). Runs before the body is read.
 */
export function adminOnly(what: string): MiddlewareHandler<AppEnv> {
  return async function adminOnly(c, next) {
    if (!c.get('principal').admin)
      throw new ForbiddenError(`${what} needs the admin key: base models are shared by every key of this Hearth.`);
    await next();
  };
}
