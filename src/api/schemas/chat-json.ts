/**
 * The text of a top-level number in a JSON body, for the one field whose value does not fit a
 * JS number: the 64-bit `seed` (JSON.parse rounds 2^63 - 1 up to 2^63, and seeds above 2^53 to
 * their neighbours). A small scanner walks the top-level object and skips nested values and
 * strings; the last occurrence of the key wins, as with JSON.parse.
 *
 * Not here: parsing JSON in general (JSON.parse does; the scanner runs only on text it accepted).
 */

function skipWs(text: string, i: number): number {
  while (i < text.length && (text[i] === ' ' || text[i] === '\t' || text[i] === '\n' || text[i] === '\r')) i++;
  return i;
}

/** Index just past the string starting at `i` (a `"`). */
function skipString(text: string, i: number): number {
  i++;
  while (i < text.length && text[i] !== '"') i += text[i] === '\\' ? 2 : 1;
  return i + 1;
}

/** Index just past the value starting at `i`. */
function skipValue(text: string, i: number): number {
  if (text[i] === '"') return skipString(text, i);
  if (text[i] === '{' || text[i] === '[') {
    let depth = 0;
    while (i < text.length) {
      const ch = text[i];
      if (ch === '"') {
        i = skipString(text, i);
        continue;
      }
      if (ch === '{' || ch === '[') depth++;
      else if (ch === '}' || ch === ']') {
        depth--;
        if (depth === 0) return i + 1;
      }
      i++;
    }
    return i;
  }
  while (i < text.length && !/[\s,}\]]/.test(text[i])) i++;
  return i;
}

/** The raw text of `key`'s value when the body is an object and that value is a number literal. */
export function topLevelNumberText(text: string, key: string): string | undefined {
  let i = skipWs(text, 0);
  if (text[i] !== '{') return undefined;
  i = skipWs(text, i + 1);
  let found: string | undefined;
  while (i < text.length && text[i] === '"') {
    const end = skipString(text, i);
    const name = JSON.parse(text.slice(i, end)) as string;
    i = skipWs(text, end);
    if (text[i] !== ':') return found;
    i = skipWs(text, i + 1);
    const valueEnd = skipValue(text, i);
    if (name === key) {
      const raw = text.slice(i, valueEnd);
      found = /^-?\d/.test(raw) ? raw : undefined;
    }
    i = skipWs(text, valueEnd);
    if (text[i] !== ',') break;
    i = skipWs(text, i + 1);
  }
  return found;
}

/** The body with `seed` exact: an integer literal becomes a BigInt. */
export function withExactSeed(body: unknown, text: string): unknown {
  if (!body || typeof body !== 'object' || Array.isArray(body) || typeof (body as { seed?: unknown }).seed !== 'number') return body;
  const raw = topLevelNumberText(text, 'seed');
  if (raw === undefined || !/^-?\d+$/.test(raw)) return body;
  return { ...body, seed: BigInt(raw) };
}
