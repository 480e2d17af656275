// The GGUF header probe's range reads (issue 26): a header spanning several requests is read into
// one growing prefix that equals the file's first bytes, and a server whose 206 body is longer
// than the range it names is dropped after at most the range's bytes (never buffered whole).
import { describe, expect, it } from 'vitest';
import { gv, writeGguf } from '../../../src/engine/model/gguf/gguf-writer';
import { probeGgufHeader } from '../../../src/engine/model/sources/gguf-probe';
import { tinyLlamaKeys } from './gguf-vocab-fixtures';

// A 3 MiB metadata string makes a header that takes several 1 MiB range requests.
const FILE = writeGguf({
  metadata: [...tinyLlamaKeys(8), ['general.file_type', gv.u32(7)], ['general.description', gv.str('x'.repeat(3 << 20))]],
  tensors: [{ name: 'token_embd.weight', ne: [64, 8], type: 'F32', data: new Uint8Array(64 * 8 * 4) }],
});

/** A ranged server over FILE; `lie` sends `extra` more bytes than each 206 names (without Content-Length). */
function server(lie?: { extra: number }) {
  const log = { requests: 0, pulled: 0 };
  const fetchFn = (async (_url: string, init: RequestInit) => {
    log.requests++;
    const [, a, b] = /^bytes=(\d+)-(\d+)$/.exec(new Headers(init.headers).get('Range') ?? '')!;
    const start = Number(a);
    const end = Math.min(Number(b) + 1, FILE.length);
    const headers = { 'Content-Range': `bytes ${start}-${end - 1}/${FILE.length}`, ETag: '"v1"' };
    if (!lie) return new Response(FILE.slice(start, end), { status: 206, headers: { ...headers, 'Content-Length': String(end - start) } });
    let sent = 0;
    const total = end - start + lie.extra;
    const body = new ReadableStream<Uint8Array>({
      pull(c) {
        if (sent >= total) return c.close();
        log.pulled++;
        const n = Math.min(64 * 1024, total - sent);
        sent += n;
        c.enqueue(new Uint8Array(n));
      },
    });
    return new Response(body, { status: 206, headers });
  }) as typeof fetch;
  return { fetchFn, log };
}

describe('probeGgufHeader', () => {
  it('reads a header over several range requests into a prefix equal to the file start', async () => {
    const { fetchFn, log } = server();
    const probe = await probeGgufHeader({ url: 'https://hub.test/m.gguf', file: 'm.gguf', fetch: fetchFn });
    expect(probe.status).toBe('read');
    if (probe.status !== 'read') return;
    expect(log.requests).toBeGreaterThanOrEqual(3);
    expect(probe.total).toBe(FILE.length);
    expect(probe.prefix.length).toBeGreaterThan(3 << 20);
    expect(Buffer.from(probe.prefix).equals(Buffer.from(FILE.subarray(0, probe.prefix.length)))).toBe(true);
    expect(probe.header.metadata.get('general.architecture')?.value).toBe('llama');
  });

  it('gives up on a 206 whose body runs past its range, after reading no more than the range', async () => {
    const { fetchFn, log } = server({ extra: 64 << 20 });
    const probe = await probeGgufHeader({ url: 'https://hub.test/m.gguf', file: 'm.gguf', fetch: fetchFn });
    expect(probe).toMatchObject({ status: 'skipped', reason: expect.stringMatching(/sent more bytes for a range of 1048576/) });
    // 1 MiB in 64 KiB chunks, plus the chunk that passed it (and the stream's read-ahead).
    expect(log.pulled).toBeLessThanOrEqual(20);
  });
});
