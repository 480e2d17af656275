/**
 * The size limit of each route's request body, in one place that both sides of the bridge read:
 * the app counts a body against its route's cap while reading it, after authentication
 * (body-stream.ts), and the Service Worker ends the stream it hands over just past the same cap
 * (src/host/wire.ts), so a hostile or runaway body is never buffered past the cap.
 * No imports: the Service Worker bundles this file.
 *
 * Not here: the nesting-depth limit of JSON bodies (json-depth.ts).
 */

/** Largest request body on every /v1 route but uploads. */
export const DEFAULT_MAX_BODY_BYTES = 32 * 1024 * 1024;
/** The path base-model uploads come to (exempt from the default limit). */
export const BASE_MODEL_FILES_PATH = '/v1/preview/base-models/files';
/** Largest base-model upload (streamed to storage as it arrives: the cap bounds what one upload may store). */
export const MAX_UPLOAD_BYTES = 2 * 1024 * 1024 * 1024;

/** The cap on the body of a request to `pathname`. */
export function bodyCapFor(pathname: string): number {
  return pathname.replace(/\/+$/, '') === BASE_MODEL_FILES_PATH ? MAX_UPLOAD_BYTES : DEFAULT_MAX_BODY_BYTES;
}

/** What a 413 says for a body over `cap` on `pathname`. */
export function bodyTooLargeMessage(pathname: string, cap: number): string {
  return pathname.replace(/\/+$/, '') === BASE_MODEL_FILES_PATH
    ? `The upload is larger than ${cap} bytes: load a model this large from a URL instead.`
    : `The request body is larger than ${cap} bytes.`;
}
