/**
 * The nesting-depth limit on JSON request bodies, checked on the raw text before anything parses,
 * validates or echoes the body (issue 10, item 5). Without it, a body of `{"a":` + 5000 `[` gave
 * a 500 on /v1/chat/completions (zod and the pydantic-style error text recurse per level until
 * the engine worker's stack overflows) and, on /v1/preview, a 422 that echoed the 5000-deep
 * `input` back: a body no client can read (Python's json stops at ~1000 levels, Playwright's
 * serializer gives up), so the caller saw no answer at all.
 *
 * Not here: the body size limit (body-limits.ts), the schemas (./schemas).
 */
import type { MiddlewareHandler } from 'hono';
import { InvalidInputError } from '../service/errors';
import { isJsonBody } from './body-type';
import type { AppEnv } from './env';

/** Deepest nesting of arrays and objects accepted in a JSON body (a chat request with a JSON schema needs ~10). */
export const MAX_JSON_DEPTH = 64;

/** Whether `text` nests arrays/objects deeper than `max` (strings skipped; linear, no recursion). */
export function jsonDeeperThan(text: string, max: number): boolean {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (ch === 0x22 /* " */) {
      for (i++; i < text.length && text.charCodeAt(i) !== 0x22; i++) if (text.charCodeAt(i) === 0x5c /* \ */) i++;
    } else if (ch === 0x5b /* [ */ || ch === 0x7b /* { */) {
      if (++depth > max) return true;
    } else if (ch === 0x5d /* ] */ || ch === 0x7d /* } */) {
      depth--;
    }
  }
  return false;
}

/**
 * Refuses a JSON body nested deeper than MAX_JSON_DEPTH: 400 in vLLM's envelope on /v1/chat,
 * 422 `json_invalid` at `["body"]` on /v1/preview (the app's error handler picks the family).
 * Bodies of other content types pass untouched (each route refuses those itself).
 */
export function limitJsonDepth(): MiddlewareHandler<AppEnv> {
  return async function limitJsonDepth(c, next) {
    if (c.req.method !== 'GET' && c.req.method !== 'HEAD' && isJsonBody(c)) {
      if (jsonDeeperThan(await c.req.text(), MAX_JSON_DEPTH)) {
        const message = `The JSON body is nested deeper than ${MAX_JSON_DEPTH} levels of arrays and objects.`;
        throw new InvalidInputError(['body'], message, null, 'json_invalid', { max_depth: MAX_JSON_DEPTH });
      }
    }
    await next();
  };
}
