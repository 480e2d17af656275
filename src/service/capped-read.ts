/**
 * Reading a byte stream whole with a byte counter that stops at a cap: the bytes, or `undefined`
 * as soon as the stream passes the cap (the rest is cancelled, never buffered). Used where a size
 * limit must hold before the bytes are in memory (issue 10, item 6): request bodies in the
 * Service Worker (src/host/wire.ts) and SFT data from a URL without Content-Length.
 *
 * Not here: what the caller answers when the cap is passed (413, 422).
 */

/** The stream's bytes, or undefined when it holds more than `cap` bytes. `sizeHint` preallocates. */
export async function readCapped(stream: ReadableStream<Uint8Array>, cap: number, sizeHint?: number): Promise<Uint8Array | undefined> {
  const reader = stream.getReader();
  // A declared size within the cap is read into one buffer (no second copy when it is right). The
  // hint comes from a Content-Length header: one that is negative, fractional or not a number is
  // ignored, not handed to the allocator (issue 26: `Content-Length: -1` was a RangeError, a 500).
  const hinted = sizeHint !== undefined && Number.isSafeInteger(sizeHint) && sizeHint >= 0 && sizeHint <= cap;
  let out = new Uint8Array(hinted ? sizeHint : 0);
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (total + value.byteLength > cap) {
      await reader.cancel(new RangeError(`more than ${cap} bytes`)).catch(() => undefined);
      return undefined;
    }
    if (total + value.byteLength > out.byteLength) {
      const grown = new Uint8Array(Math.min(cap, Math.max(out.byteLength * 2, total + value.byteLength, 64 * 1024)));
      grown.set(out.subarray(0, total));
      out = grown;
    }
    out.set(value, total);
    total += value.byteLength;
  }
  return total === out.byteLength ? out : out.slice(0, total);
}

/**
 * `stream` passed through with a byte counter, pulled only as its reader reads (no pipe reading
 * ahead). Past `cap` it errors with `over()`, or, when `over` is null, lets the chunk that passed
 * the cap through and then ends (so a counter further on sees the excess itself).
 */
export function cappedStream(stream: ReadableStream<Uint8Array>, cap: number, over: (() => Error) | null): ReadableStream<Uint8Array> {
  const reader = stream.getReader();
  let total = 0;
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        if (total > cap) {
          controller.close();
          await reader.cancel().catch(() => undefined);
          return;
        }
        const { done, value } = await reader.read();
        if (done) return controller.close();
        total += value.byteLength;
        if (total > cap && over) {
          controller.error(over());
          await reader.cancel().catch(() => undefined);
          return;
        }
        controller.enqueue(value);
      },
      cancel: (reason) => reader.cancel(reason),
    },
    { highWaterMark: 0 },
  );
}
