// The streaming multipart/form-data reader against a real encoder (undici's, behind Node's
// `new Response(formData)`, the same algorithm browsers follow), with the body cut into random
// chunks so that every delimiter and header lands across chunk edges somewhere.
import { describe, expect, it } from 'vitest';
import { multipartBoundary, partBytes, partText, readMultipart, type FormPart } from '../../../src/api/multipart-stream';

/** A deterministic PRNG (mulberry32) so a failure reproduces. */
function rng(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** `bytes` as a stream of chunks of random sizes from 1 to `max`. */
function chunked(bytes: Uint8Array, rand: () => number, max: number): ReadableStream<Uint8Array> {
  let at = 0;
  return new ReadableStream({
    pull(c) {
      if (at >= bytes.length) return c.close();
      const n = 1 + Math.floor(rand() * max);
      c.enqueue(bytes.slice(at, (at += n)));
    },
  });
}

async function encode(form: FormData): Promise<{ bytes: Uint8Array; boundary: string }> {
  const res = new Response(form);
  const boundary = multipartBoundary(res.headers.get('Content-Type'));
  if (!boundary) throw new Error('no boundary');
  return { bytes: new Uint8Array(await res.arrayBuffer()), boundary };
}

async function collect(parts: AsyncIterable<FormPart>) {
  const out: { name: string; filename: string | null; type: string | null; bytes: Uint8Array }[] = [];
  for await (const p of parts) out.push({ name: p.name, filename: p.filename, type: p.type, bytes: await partBytes(p) });
  return out;
}

describe('readMultipart', () => {
  it('yields the fields and files of a real encoder, however the body is chunked', async () => {
    const rand = rng(7);
    for (let round = 0; round < 12; round++) {
      const form = new FormData();
      const expected: { name: string; filename: string | null; bytes: Uint8Array }[] = [];
      const n = 1 + Math.floor(rand() * 5);
      for (let i = 0; i < n; i++) {
        if (rand() < 0.4) {
          const value = `value ${i} "quoted" ${'x'.repeat(Math.floor(rand() * 50))}`;
          form.append(`field "${i}"`, value);
          expected.push({ name: `field "${i}"`, filename: null, bytes: new TextEncoder().encode(value) });
        } else {
          // Random bytes, salted with CRLF-dash runs that start like a delimiter.
          const bytes = new Uint8Array(Math.floor(rand() * 20_000));
          for (let j = 0; j < bytes.length; j++) bytes[j] = rand() < 0.05 ? [13, 10, 45][j % 3] : Math.floor(rand() * 256);
          form.append('file', new File([bytes], `f${i}.bin`, { type: 'application/octet-stream' }));
          expected.push({ name: 'file', filename: `f${i}.bin`, bytes });
        }
      }
      const { bytes, boundary } = await encode(form);
      const parts = await collect(readMultipart(chunked(bytes, rand, round % 2 ? 7 : 4096), boundary));
      expect(parts.map((p) => [p.name, p.filename])).toEqual(expected.map((p) => [p.name, p.filename]));
      for (let i = 0; i < parts.length; i++)
        expect(Buffer.from(parts[i].bytes).equals(Buffer.from(expected[i].bytes)), `part ${i}`).toBe(true);
      for (const p of parts) if (p.filename) expect(p.type).toBe('application/octet-stream');
    }
  });

  it('streams a file part chunk by chunk instead of holding it whole', async () => {
    const form = new FormData();
    form.append('file', new File([new Uint8Array(4 << 20).fill(7)], 'big.bin'));
    const { bytes, boundary } = await encode(form);
    let largest = 0;
    for await (const part of readMultipart(chunked(bytes, rng(1), 64 * 1024), boundary)) {
      for await (const chunk of part.body) largest = Math.max(largest, chunk.length);
    }
    expect(largest).toBeLessThanOrEqual(64 * 1024);
  });

  it('skips what a consumer left unread of a part and goes on with the next', async () => {
    const form = new FormData();
    form.append('file', new File([new Uint8Array(100_000).fill(1)], 'a.bin'));
    form.append('id', 'org/name');
    const { bytes, boundary } = await encode(form);
    const seen: string[] = [];
    for await (const part of readMultipart(chunked(bytes, rng(2), 1000), boundary)) {
      if (part.filename) {
        for await (const _ of part.body) break;
        seen.push(part.filename);
      } else {
        seen.push(await partText(part, 100));
      }
    }
    expect(seen).toEqual(['a.bin', 'org/name']);
  });

  it('refuses a body cut short, a missing boundary and a text field over its cap with 400s', async () => {
    const form = new FormData();
    form.append('file', new File([new Uint8Array(5000).fill(65)], 'a.bin'));
    form.append('id', 'x'.repeat(200));
    const { bytes, boundary } = await encode(form);
    const read = async (body: Uint8Array, b = boundary) => {
      try {
        for await (const p of readMultipart(chunked(body, rng(3), 512), b)) await partText(p, 100_000);
        return 'parsed';
      } catch (err) {
        return `${(err as { status?: number }).status} ${(err as Error).message}`;
      }
    };
    expect(await read(bytes.subarray(0, 3000))).toMatch(/^400 The multipart body does not parse: the body ends inside the part "file"/);
    expect(await read(bytes, 'another-boundary')).toMatch(/^400 .*no boundary line/);
    expect(await read(bytes)).toBe('parsed');
    const fields = async () => {
      for await (const p of readMultipart(chunked(bytes, rng(4), 512), boundary)) if (!p.filename) await partText(p, 100);
    };
    await expect(fields()).rejects.toMatchObject({ status: 400, message: expect.stringMatching(/"id" is longer than 100 bytes/) });
  });

  it('reads the boundary of a Content-Type, quoted or not', () => {
    expect(multipartBoundary('multipart/form-data; boundary=----abc123')).toBe('----abc123');
    expect(multipartBoundary('multipart/form-data; boundary="a b"')).toBe('a b');
    expect(multipartBoundary('multipart/form-data')).toBeNull();
  });
});
