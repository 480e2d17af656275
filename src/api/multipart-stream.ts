/**
 * A streaming multipart/form-data reader (RFC 7578 over RFC 2046's multipart syntax): yields each
 * part's name, file name and content type, and its body as chunks while the request body is still
 * arriving, so a 2 GiB model upload goes to storage piece by piece instead of through
 * `formData()`, which holds the whole body (issue 10, item 6). Memory stays at one network chunk
 * plus a delimiter's length.
 *
 * Hearth's own because the maintained parsers that run on web streams (@remix-run/multipart-parser,
 * @apeleghq/multipart-parser) hand over each part's body whole, as one buffer.
 *
 * A part's body must be read to its end (or abandoned) before the next part is asked for; the
 * reader skips what was left unread. A body that does not parse is a 400.
 *
 * Not here: collecting small uploads into memory (multipart.ts), the size cap (body-stream.ts).
 */
import { HTTPException } from 'hono/http-exception';

export interface FormPart {
  /** The form field's name. */
  name: string;
  /** The file name of a file part (any folder part left in), null for a text field. */
  filename: string | null;
  /** The part's Content-Type, if it has one. */
  type: string | null;
  /** The part's bytes, in the chunks they arrive in (read once). */
  body: AsyncIterable<Uint8Array>;
}

/** Largest header block of one part: a field name, a file name and a type fit in far less. */
const MAX_HEADER_BYTES = 16 * 1024;
/** Most parts in one body (a model folder is a dozen files). */
export const MAX_PARTS = 1000;

const CRLF = new Uint8Array([13, 10]);
const HEADER_END = new Uint8Array([13, 10, 13, 10]);

function malformed(why: string): HTTPException {
  return new HTTPException(400, { message: `The multipart body does not parse: ${why}` });
}

/** The boundary of a multipart Content-Type header, or null. */
export function multipartBoundary(contentType: string | null | undefined): string | null {
  const m = /;\s*boundary=(?:"([^"]{1,70})"|([^\s;]{1,70}))/i.exec(contentType ?? '');
  return m ? (m[1] ?? m[2]) : null;
}

/** Where `pattern` starts in `buf` at or after `from`, or -1. */
function indexOf(buf: Uint8Array, pattern: Uint8Array, from: number): number {
  const first = pattern[0];
  const last = buf.length - pattern.length;
  for (let i = buf.indexOf(first, from); i !== -1 && i <= last; i = buf.indexOf(first, i + 1)) {
    let j = 1;
    while (j < pattern.length && buf[i + j] === pattern[j]) j++;
    if (j === pattern.length) return i;
  }
  return -1;
}

/** The length of the longest end of `buf[from..]` that is a proper prefix of `pattern` (a delimiter cut by a chunk edge). */
function partialTail(buf: Uint8Array, pattern: Uint8Array, from: number): number {
  for (let i = Math.max(from, buf.length - pattern.length + 1); i < buf.length; i++) {
    if (buf[i] !== pattern[0]) continue;
    let j = 1;
    while (i + j < buf.length && buf[i + j] === pattern[j]) j++;
    if (i + j === buf.length) return buf.length - i;
  }
  return 0;
}

/** The bytes of a stream with a read position: `buf[pos..]` is what has arrived and is not yet consumed. */
class ByteQueue {
  buf: Uint8Array;
  pos = 0;
  ended = false;
  constructor(
    private readonly reader: ReadableStreamDefaultReader<Uint8Array>,
    seed: Uint8Array,
  ) {
    this.buf = seed;
  }
  get available(): number {
    return this.buf.length - this.pos;
  }
  /** Reads one more chunk onto the unconsumed bytes; false at the end of the stream. */
  async more(): Promise<boolean> {
    if (this.ended) return false;
    const { done, value } = await this.reader.read();
    if (done) {
      this.ended = true;
      return false;
    }
    if (this.available === 0) {
      this.buf = value; // the common case in a file's body: no copy
    } else {
      const joined = new Uint8Array(this.available + value.length);
      joined.set(this.buf.subarray(this.pos));
      joined.set(value, this.available);
      this.buf = joined;
    }
    this.pos = 0;
    return true;
  }
  /** Reads until at least `n` bytes are unconsumed; false if the stream ends first. */
  async ensure(n: number): Promise<boolean> {
    while (this.available < n) if (!(await this.more())) return false;
    return true;
  }
}

/** A header parameter such as `name="x"` of a Content-Disposition value (browsers percent-encode `"`, CR and LF). */
function dispositionParam(value: string, param: string): string | null {
  const m = new RegExp(`;\\s*${param}="([^"]*)"`, 'i').exec(value) ?? new RegExp(`;\\s*${param}=([^\\s;"]+)`, 'i').exec(value);
  return m ? m[1].replace(/%22/g, '"').replace(/%0D/gi, '\r').replace(/%0A/gi, '\n') : null;
}

function parseHeaders(block: string): { name: string; filename: string | null; type: string | null } {
  const headers = new Map<string, string>();
  for (const line of block.split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon > 0) headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
  }
  const disposition = headers.get('content-disposition');
  if (!disposition || !/^form-data\b/i.test(disposition)) throw malformed('a part has no Content-Disposition: form-data header.');
  const name = dispositionParam(disposition, 'name');
  if (name === null) throw malformed('a part has no field name.');
  return { name, filename: dispositionParam(disposition, 'filename'), type: headers.get('content-type') ?? null };
}

/**
 * The parts of a multipart body, in order, each body streamed. Throws a 400 HTTPException for a
 * body that does not parse; errors of the stream itself (a size cap, an aborted client) pass through.
 */
export async function* readMultipart(stream: ReadableStream<Uint8Array>, boundary: string): AsyncGenerator<FormPart> {
  const delimiter = new TextEncoder().encode(`\r\n--${boundary}`);
  const reader = stream.getReader();
  // The first delimiter has no CRLF in front: seeding one lets one search find every delimiter.
  const q = new ByteQueue(reader, CRLF.slice());
  try {
    // The preamble, up to the first delimiter, is ignored (browsers send none).
    for (;;) {
      const at = indexOf(q.buf, delimiter, q.pos);
      if (at !== -1) {
        q.pos = at + delimiter.length;
        break;
      }
      q.pos = q.buf.length - partialTail(q.buf, delimiter, q.pos);
      if (!(await q.more())) throw malformed('no boundary line was found.');
    }
    for (let parts = 0; ; parts++) {
      // After a delimiter: "--" ends the body; otherwise optional padding, then CRLF and the headers.
      if (!(await q.ensure(2))) throw malformed('the body ends after a boundary line.');
      if (q.buf[q.pos] === 45 && q.buf[q.pos + 1] === 45) return;
      if (parts >= MAX_PARTS) throw malformed(`more than ${MAX_PARTS} parts.`);
      let headerEnd: number;
      for (;;) {
        headerEnd = indexOf(q.buf, HEADER_END, q.pos);
        if (headerEnd !== -1) break;
        if (q.available > MAX_HEADER_BYTES) throw malformed(`a part's headers are longer than ${MAX_HEADER_BYTES} bytes.`);
        if (!(await q.more())) throw malformed("the body ends inside a part's headers.");
      }
      if (headerEnd - q.pos > MAX_HEADER_BYTES) throw malformed(`a part's headers are longer than ${MAX_HEADER_BYTES} bytes.`);
      const head = new TextDecoder().decode(q.buf.subarray(q.pos, headerEnd));
      const lineEnd = head.indexOf('\r\n');
      // The rest of the boundary line may only be padding (RFC 2046 section 5.1.1).
      if (!/^[ \t]*$/.test(lineEnd === -1 ? head : head.slice(0, lineEnd))) throw malformed('a boundary line has trailing text.');
      const meta = parseHeaders(lineEnd === -1 ? '' : head.slice(lineEnd + 2));
      q.pos = headerEnd + HEADER_END.length;

      let ended = false;
      // A fresh generator over the same queue continues where the last one stopped (a consumer
      // that breaks out of its loop closes the generator it held).
      const bodyFrom = async function* () {
        for (;;) {
          const at = indexOf(q.buf, delimiter, q.pos);
          if (at !== -1) {
            const piece = q.buf.subarray(q.pos, at);
            q.pos = at + delimiter.length;
            ended = true;
            if (piece.length > 0) yield piece;
            return;
          }
          const keep = partialTail(q.buf, delimiter, q.pos);
          const piece = q.buf.subarray(q.pos, q.buf.length - keep);
          q.pos = q.buf.length - keep;
          if (piece.length > 0) yield piece;
          if (!(await q.more())) throw malformed(`the body ends inside the part "${meta.name}".`);
        }
      };
      yield { ...meta, body: bodyFrom() };
      // Whatever the consumer left unread is skipped.
      if (!ended) for await (const _ of bodyFrom());
    }
  } finally {
    // Stops the stream where parsing stopped (an error, or the consumer gave up); a no-op at its end.
    reader.cancel().catch(() => undefined);
  }
}

/** A text part's value, refused past `max` bytes. */
export async function partText(part: FormPart, max: number): Promise<string> {
  return new TextDecoder().decode(await partBytes(part, max));
}

/** A part's whole body as one array (for small uploads, under the route's body cap), refused past `max` bytes. */
export async function partBytes(part: FormPart, max = Infinity): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  let total = 0;
  for await (const chunk of part.body) {
    total += chunk.length;
    if (total > max) throw malformed(`the field "${part.name}" is longer than ${max} bytes.`);
    chunks.push(chunk.slice());
  }
  return chunks.length === 1 ? chunks[0] : new Uint8Array(await new Blob(chunks as BlobPart[]).arrayBuffer());
}
