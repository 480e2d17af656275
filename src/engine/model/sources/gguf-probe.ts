/**
 * probeGgufHeader: the header, metadata and tensor table of a GGUF file on a server, read with
 * byte-range requests before the file itself is downloaded. A GGUF's header is at its start, so a
 * file whose architecture, metadata or tensor types Hearth cannot use is refused after a few MiB,
 * not after gigabytes. The bytes read are returned, so the download can store them as the file's
 * first bytes and resume after them (nothing is fetched twice).
 *
 * A server that ignores ranges, cannot be reached or refuses is not an answer about the file:
 * the probe then says "skipped" and the download finds out by itself (its own retries, its own
 * errors). Only a 404 (no such file) and a header the reader rejects are answers.
 * Not here: the GGUF format (model/gguf/gguf-reader.ts), downloading (download.ts).
 */
import { readGguf, type GgufFile } from '../gguf/gguf-reader';
import type { ByteSource } from '../files/safetensors';
import { parseContentRange, responseValidator } from './download';

export type GgufProbe =
  | { status: 'read'; header: GgufFile; prefix: Uint8Array; total: number; validator: string | null }
  | { status: 'missing' }
  | { status: 'skipped'; reason: string };

export interface ProbeOptions {
  url: string;
  /** File name for messages ("model-Q4_K_M.gguf"). */
  file: string;
  fetch?: typeof fetch;
  headers?: Record<string, string>;
  signal?: AbortSignal;
}

/** Bytes asked for per request: a header with a 150k-token vocabulary is a few MiB. */
const STEP = 1 << 20;

/** A request answered with something other than the range: stop probing, let the download decide. */
class NotRanged extends Error {}

/**
 * The body of a range response, read no further than `max` bytes (the range asked for): undefined
 * when the server sends more. A 206 whose body is longer than its range is never buffered whole
 * (issue 26: the body was read whole before its length was checked).
 */
async function rangeBody(res: Response, max: number): Promise<Uint8Array | undefined> {
  const declared = Number(res.headers.get('Content-Length') ?? NaN);
  if (declared > max || !res.body) {
    await res.body?.cancel();
    return declared > max ? undefined : new Uint8Array(0);
  }
  const out = new Uint8Array(max);
  let got = 0;
  const reader = res.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return out.subarray(0, got);
    if (got + value.byteLength > max) {
      await reader.cancel().catch(() => undefined);
      return undefined;
    }
    out.set(value, got);
    got += value.byteLength;
  }
}

/**
 * The file's prefix, grown by range requests as the reader asks for more (it only reads forward),
 * into one buffer whose capacity doubles: each byte is copied O(1) times in all, and a read is a
 * view (issue 26: every read after a fetch copied the whole prefix again).
 */
class RangedPrefix implements ByteSource {
  private buf = new Uint8Array(0);
  have = 0;
  size = 0;
  validator: string | null = null;

  constructor(private readonly o: ProbeOptions) {}

  /** The first request: the file's size and validator come from its Content-Range and ETag. */
  async start(): Promise<'ranged' | 'missing'> {
    const res = await this.fetchRange(0, STEP);
    if (res === 'missing') return res;
    return 'ranged';
  }

  async read(begin: number, end: number): Promise<Uint8Array> {
    while (this.have < Math.min(end, this.size)) {
      const got = await this.fetchRange(this.have, Math.max(end, this.have + STEP));
      if (got === 'missing') throw new NotRanged('the file disappeared while its header was read');
    }
    return this.buf.subarray(begin, Math.min(end, this.have));
  }

  bytes(): Uint8Array {
    return this.buf.subarray(0, this.have);
  }

  private append(body: Uint8Array): void {
    if (this.have + body.byteLength > this.buf.byteLength) {
      const grown = new Uint8Array(Math.max(this.buf.byteLength * 2, this.have + body.byteLength));
      grown.set(this.buf.subarray(0, this.have));
      this.buf = grown;
    }
    this.buf.set(body, this.have);
    this.have += body.byteLength;
  }

  private async fetchRange(begin: number, end: number): Promise<'ok' | 'missing'> {
    const { o } = this;
    const headers = new Headers(o.headers);
    headers.set('Range', `bytes=${begin}-${end - 1}`);
    if (this.validator) headers.set('If-Range', this.validator);
    const fetchFn = o.fetch ?? globalThis.fetch.bind(globalThis);
    const res = await fetchFn(o.url, { headers, signal: o.signal });
    if (res.status === 404 && begin === 0) {
      await res.body?.cancel();
      return 'missing';
    }
    const range = res.status === 206 ? parseContentRange(res.headers.get('Content-Range')) : null;
    if (!range || range.start !== begin || range.total == null || (begin > 0 && range.total !== this.size)) {
      await res.body?.cancel();
      throw new NotRanged(`${o.url} answered ${res.status} to a range request`);
    }
    const body = await rangeBody(res, end - begin);
    if (!body || body.byteLength === 0) throw new NotRanged(`${o.url} sent ${body ? 0 : 'more'} bytes for a range of ${end - begin}`);
    if (begin === 0) {
      this.size = range.total;
      this.validator = responseValidator(res);
    }
    this.append(body);
    return 'ok';
  }
}

/** Reads the GGUF header of `o.url`; a header Hearth cannot use throws the reader's GgufError. */
export async function probeGgufHeader(o: ProbeOptions): Promise<GgufProbe> {
  const prefix = new RangedPrefix(o);
  try {
    if ((await prefix.start()) === 'missing') return { status: 'missing' };
  } catch (e) {
    if (o.signal?.aborted) throw o.signal.reason;
    return { status: 'skipped', reason: (e as Error).message };
  }
  let header: GgufFile;
  try {
    header = await readGguf(prefix, o.file);
  } catch (e) {
    if (o.signal?.aborted) throw o.signal.reason;
    // A network failure halfway through the header is no verdict on the file.
    if (e instanceof NotRanged || e instanceof TypeError) return { status: 'skipped', reason: e.message };
    throw e;
  }
  return { status: 'read', header, prefix: prefix.bytes(), total: prefix.size, validator: prefix.validator };
}
