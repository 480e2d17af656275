// Size caps that hold while reading (issue 10, item 6): readCapped stops at the cap and cancels
// the rest; SFT data from a URL without Content-Length is refused at 64 MiB without being read whole.
import { describe, expect, it } from 'vitest';
import { readCapped } from '../../../src/service/capped-read';
import { MAX_TRAINING_DATA_BYTES, resolveTrainingData } from '../../../src/service/training/sft-data';

/** A stream of `count` chunks of `size` bytes; `pulled()` says how many chunks were read. */
function chunks(count: number, size: number) {
  let pulled = 0;
  let cancelled = false;
  const stream = new ReadableStream<Uint8Array>({
    pull(c) {
      if (pulled === count) return c.close();
      c.enqueue(new Uint8Array(size).fill(pulled++ % 251));
    },
    cancel() {
      cancelled = true;
    },
  });
  return { stream, pulled: () => pulled, cancelled: () => cancelled };
}

describe('readCapped', () => {
  it('returns every byte of a stream within the cap, with or without a size hint', async () => {
    for (const hint of [undefined, 10 * 1000, 3]) {
      const src = chunks(10, 1000);
      const out = await readCapped(src.stream, 10 * 1000, hint);
      expect(out?.byteLength).toBe(10 * 1000);
      expect(out?.[0]).toBe(0);
      expect(out?.[9999]).toBe(9);
      expect(out?.buffer.byteLength).toBe(10 * 1000);
    }
  });

  it('stops at the cap and cancels the rest', async () => {
    const src = chunks(1000, 1000);
    expect(await readCapped(src.stream, 4500)).toBeUndefined();
    expect(src.pulled()).toBeLessThan(10);
    expect(src.cancelled()).toBe(true);
  });
});

describe('SFT data from a URL without Content-Length', () => {
  it('is refused with a 422 at the 64 MiB cap, read no further', async () => {
    const src = chunks(1024, 1 << 20);
    const fetchFn = (async () => new Response(src.stream)) as typeof fetch;
    await expect(resolveTrainingData('https://example.test/train.jsonl', 'http://127.0.0.1', fetchFn)).rejects.toMatchObject({
      status: 422,
      loc: ['body', 'training_data_url'],
      message: `The training data is larger than ${MAX_TRAINING_DATA_BYTES / 2 ** 20} MiB.`,
    });
    expect(src.pulled()).toBeLessThanOrEqual(66);
  });
});

describe('a false Content-Length on SFT data (issue 26)', () => {
  it('is ignored as a size hint: the data is read by counting, never a 500', async () => {
    const line = '{"messages": [{"role": "user", "content": "1 + 1?"}, {"role": "assistant", "content": "2"}]}\n';
    for (const declared of ['-1', '-4294967296', '1.5', 'abc']) {
      const fetchFn = (async () => new Response(line, { headers: { 'Content-Length': declared } })) as typeof fetch;
      const data = await resolveTrainingData('https://example.test/train.jsonl', 'http://127.0.0.1', fetchFn);
      expect(new TextDecoder().decode(data.bytes), declared).toBe(line);
    }
  });
});
