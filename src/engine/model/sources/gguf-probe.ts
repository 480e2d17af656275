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
import type { ByteSource } from '../safetensors';
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

/** The file's prefix, grown by range requests as the reader asks for more (it only reads forward). */
class RangedPrefix implements ByteSource {
  private chunks: Uint8Array[] = [];
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
    return this.bytes().subarray(begin, end);
  }

  bytes(): Uint8Array {
    if (this.chunks.length !== 1) {
      const all = new Uint8Array(this.have);
      let at = 0;
      for (const c of this.chunks) {
        all.set(c, at);
        at += c.byteLength;
      }
      this.chunks = [all];
    }
    return this.chunks[0] ?? new Uint8Array(0);
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
    const body = new Uint8Array(await res.arrayBuffer());
    if (body.byteLength === 0 || body.byteLength > end - begin) throw new NotRanged(`${o.url} sent ${body.byteLength} bytes for a range`);
    if (begin === 0) {
      this.size = range.total;
      this.validator = responseValidator(res);
    }
    this.chunks.push(body);
    this.have += body.byteLength;
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
