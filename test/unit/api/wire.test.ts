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
  it('carries method, url, headers and body bytes of a request', async () => {
    const req = new Request('http://127.0.0.1/v1/preview/models', {
      method: 'POST',
      headers: { Authorization: 'Bearer k', 'Content-Type': 'application/json', 'X-Stainless-Lang': 'js' },
      body: '{"a":1}',
    });
    const wire = await toWireRequest(req);
    expect(structuredClone(wire)).toEqual(wire);
    const back = fromWireRequest(wire);
    expect(back.method).toBe('POST');
    expect(back.url).toBe(req.url);
    expect(back.headers.get('authorization')).toBe('Bearer k');
    expect(back.headers.get('x-stainless-lang')).toBe('js');
    expect(await back.json()).toEqual({ a: 1 });
    expect((await toWireRequest(new Request('http://127.0.0.1/v1/x'))).body).toBeNull();
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
