// The pieces of the Service Worker bridge that need no browser: which requests it takes, and the
// request/response conversion across the MessagePort (streamed bodies stay streams).
import { describe, expect, it } from 'vitest';
import { isV1 } from '../../../src/host/sw/service-worker';
import { fromWireRequest, fromWireResponse, toWireRequest, toWireResponse } from '../../../src/host/wire';

describe('isV1', () => {
  const origin = 'http://127.0.0.1:5173';
  it('takes every same-origin path under /v1, with or without a trailing slash', () => {
    for (const p of ['/v1', '/v1/', '/v1/chat/completions', '/v1/chat/completions/', '/v1/preview/models?limit=1']) {
      expect(isV1(new URL(p, origin), origin), p).toBe(true);
    }
  });
  it('leaves the app, static files, look-alike paths and other origins alone', () => {
    for (const url of [
      `${origin}/`,
      `${origin}/models/index.json`,
      `${origin}/v10/x`,
      `${origin}/api/v1/x`,
      'http://example.com/v1/models',
    ]) {
      expect(isV1(new URL(url), origin), url).toBe(false);
    }
  });
});

describe('wire conversion', () => {
  it('carries method, url, headers and the body stream of a request', async () => {
    const req = new Request('http://127.0.0.1/v1/preview/models', {
      method: 'POST',
      headers: { Authorization: 'Bearer k', 'Content-Type': 'application/json', 'X-Stainless-Lang': 'js' },
      body: '{"a":1}',
    });
    const wire = toWireRequest(req);
    // The body crosses as a transferred stream: it is moved, not cloned.
    const { body, ...rest } = wire;
    const moved = structuredClone(wire, { transfer: [body as unknown as Transferable] });
    expect({ ...moved, body: undefined }).toEqual({ ...rest, body: undefined });
    const { request: back } = fromWireRequest(moved);
    expect(back.method).toBe('POST');
    expect(back.url).toBe(req.url);
    expect(back.headers.get('authorization')).toBe('Bearer k');
    expect(back.headers.get('x-stainless-lang')).toBe('js');
    expect(await back.json()).toEqual({ a: 1 });
    expect(toWireRequest(new Request('http://127.0.0.1/v1/x')).body).toBeNull();
  });

  it('ends a request body just past its cap, and release() stops a body the app never read', async () => {
    const chunk = new Uint8Array(1000);
    let pulled = 0;
    const endless = () =>
      new ReadableStream<Uint8Array>({
        pull(c) {
          pulled++;
          c.enqueue(chunk.slice());
        },
      });
    const request = () => new Request('http://127.0.0.1/v1/x', { method: 'POST', body: endless(), duplex: 'half' } as RequestInit);
    const capped = toWireRequest(request(), 2500);
    expect((await new Response(capped.body).arrayBuffer()).byteLength).toBe(3000);

    pulled = 0;
    const unread = fromWireRequest(toWireRequest(request()));
    unread.release();
    await new Promise((r) => setTimeout(r, 20));
    const before = pulled;
    await new Promise((r) => setTimeout(r, 20));
    expect(pulled).toBe(before);
    expect(pulled).toBeLessThan(10);
  });

  it('passes a response body through as a stream, chunk by chunk', async () => {
    let push!: (s: string) => void;
    let end!: () => void;
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        push = (s) => controller.enqueue(new TextEncoder().encode(s));
        end = () => controller.close();
      },
    });
    const wire = toWireResponse(new Response(body, { status: 200, headers: { 'Content-Type': 'text/event-stream' } }));
    const res = fromWireResponse(wire);
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    const reader = res.body!.getReader();
    push('data: 1\n\n');
    expect(new TextDecoder().decode((await reader.read()).value)).toBe('data: 1\n\n');
    push('data: 2\n\n');
    expect(new TextDecoder().decode((await reader.read()).value)).toBe('data: 2\n\n');
    end();
    expect((await reader.read()).done).toBe(true);
  });

  it('gives null-body statuses a null body', () => {
    const res = fromWireResponse({ status: 204, statusText: '', headers: [], body: null });
    expect(res.status).toBe(204);
    expect(res.body).toBeNull();
  });
});
