/**
 * The request body size limit, applied once on every /v1 route right after authentication, so a
 * request with a missing or bad key is refused before any of its body is read (issue 10, items 2
 * and 6; the Service Worker hands the body over as a stream the engine pulls). A declared
 * Content-Length over the route's cap is a 413 without reading; otherwise the bytes are counted
 * as they arrive and the read stops at the cap. An ordinary body (32 MiB at most) is read here,
 * whole; a base-model upload (2 GiB) stays a stream that its route writes to storage as it comes,
 * and that errors with the 413 the moment it passes the cap.
 *
 * Not here: the caps themselves (body-limits.ts, which the Service Worker shares).
 */
import type { MiddlewareHandler } from 'hono';
import { HTTPException } from 'hono/http-exception';
import { cappedStream, readCapped } from '../service/capped-read';
import { requireMediaType } from './body-type';
import { BASE_MODEL_FILES_PATH, bodyTooLargeMessage, DEFAULT_MAX_BODY_BYTES, MAX_UPLOAD_BYTES } from './body-limits';
import type { AppEnv } from './env';

export function limitBody(): MiddlewareHandler<AppEnv> {
  return async function limitBody(c, next) {
    const raw = c.req.raw;
    if (!raw.body) return next();
    const deps = c.get('deps');
    const streamed = c.req.path.replace(/\/+$/, '') === BASE_MODEL_FILES_PATH;
    const cap = streamed ? (deps.maxUploadBytes ?? MAX_UPLOAD_BYTES) : (deps.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES);
    const tooLarge = () => new HTTPException(413, { message: bodyTooLargeMessage(c.req.path, cap) });
    const declared = raw.headers.get('Content-Length');
    if (declared !== null && Number(declared) > cap) {
      raw.body.cancel().catch(() => undefined);
      throw tooLarge();
    }
    if (streamed) {
      // The upload route takes nothing else, and a JSON body would be read whole by the depth
      // check (json-depth.ts) before the route's admin check could refuse it.
      requireMediaType(c, 'multipart/form-data');
      c.req.raw = new Request(raw, { method: raw.method, body: cappedStream(raw.body, cap, tooLarge), duplex: 'half' } as RequestInit);
    } else {
      const bytes = await readCapped(raw.body, cap, declared === null ? undefined : Number(declared));
      if (bytes === undefined) throw tooLarge();
      c.req.raw = new Request(raw, { method: raw.method, body: bytes as BlobPart });
    }
    await next();
  };
}
