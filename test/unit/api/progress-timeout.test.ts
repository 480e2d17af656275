// The Service Worker's progress timeout on streamed bodies (issue 10): a stream that stops
// sending chunks is ended after the timeout (an SSE error event in its family's shape, or a
// stream error) and the engine's side is cancelled; a header can only shorten the timeout.
import { describe, expect, it } from 'vitest';
import { PROGRESS_TIMEOUT_MS, progressTimeoutFor, withChunkTimeout } from '../../../src/host/sw/progress-timeout';

/** One chunk, then nothing ever again; `cancelled` resolves with the reason the reader gave. */
function stallsAfterOneChunk() {
  let cancelled!: (reason: unknown) => void;
  const cancel = new Promise<unknown>((r) => (cancelled = r));
  let sent = false;
  const stream = new ReadableStream<Uint8Array>({
    pull(c) {
      if (sent) return new Promise<void>(() => undefined);
      sent = true;
      c.enqueue(new TextEncoder().encode('data: {"a":1}\n\n'));
    },
    cancel: (reason) => cancelled(reason),
  });
  return { stream, cancel };
}

describe('withChunkTimeout', () => {
  it('ends a stalled SSE stream with a 504 error event and [DONE], and cancels the source', async () => {
    const src = stallsAfterOneChunk();
    const text = await new Response(withChunkTimeout(src.stream, 50, '/v1/chat/completions', true)).text();
    const events = text.split('\n\n').filter(Boolean);
    expect(events[0]).toBe('data: {"a":1}');
    expect(JSON.parse(events[1].slice(6))).toMatchObject({
      error: { code: 504, type: 'GatewayTimeoutError', message: expect.stringMatching(/no progress/) },
    });
    expect(events[2]).toBe('data: [DONE]');
    expect(String(await src.cancel)).toMatch(/no progress/);
  });

  it('errors a stalled non-SSE stream', async () => {
    const src = stallsAfterOneChunk();
    await expect(new Response(withChunkTimeout(src.stream, 50, '/v1/preview/models', false)).text()).rejects.toThrow(/no progress/);
    await src.cancel;
  });

  it('passes a stream that keeps sending through unchanged', async () => {
    const parts = ['a', 'b', 'c'];
    const stream = new ReadableStream<Uint8Array>({
      async pull(c) {
        await new Promise((r) => setTimeout(r, 20));
        const p = parts.shift();
        if (p === undefined) c.close();
        else c.enqueue(new TextEncoder().encode(p));
      },
    });
    expect(await new Response(withChunkTimeout(stream, 200, '/v1/chat/completions', true)).text()).toBe('abc');
  });
});

describe('progressTimeoutFor', () => {
  const req = (h?: string) => new Request('http://x/v1/chat/completions', { headers: h ? { 'X-Hearth-Progress-Timeout': h } : {} });
  it('takes a shorter timeout from the header, never a longer one', () => {
    expect(progressTimeoutFor(req())).toBe(PROGRESS_TIMEOUT_MS);
    expect(progressTimeoutFor(req('5'))).toBe(5000);
    expect(progressTimeoutFor(req('100000'))).toBe(PROGRESS_TIMEOUT_MS);
    expect(progressTimeoutFor(req('nonsense'))).toBe(PROGRESS_TIMEOUT_MS);
  });
});
