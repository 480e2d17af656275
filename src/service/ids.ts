/**
 * Identifiers Hearth mints: UUIDs for records, short run ids, and API keys.
 *
 * Not here: hashing keys (api-keys.ts).
 */

export function newId(): string {
  return crypto.randomUUID();
}

const RUN_ID_ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';

/** An 8-character lower-case id, the shape of a W&B run id (ART passes it back as `run_id`). */
export function newRunId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(8));
  return Array.from(bytes, (b) => RUN_ID_ALPHABET[b % RUN_ID_ALPHABET.length]).join('');
}

/** Base64url without padding. */
export function base64url(bytes: Uint8Array): string {
  let s = '';
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}
