// The bridge's HTTP and socket sides in Node, with a scripted tab on the other end of its real
// WebSocket (the real tab, in Chromium, is test/e2e/bridge.test.ts): what reaches the tab of a
// request, what a client gets back, and every way a request ends (tab gone before or during a
// stream, client gone, body over its cap), plus the Origin and Host checks and pairing refusals.
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { DEFAULT_MAX_BODY_BYTES } from '../../../src/api/body-limits';
import { startBridge, type Bridge } from '../../../bridge/src/server';
import {
  CLOSE,
  TAB_PATH,
  decodeChunk,
  encodeChunk,
  parseBridgeMessage,
  type BridgeMessage,
  type TabMessage,
} from '../../../bridge/src/protocol';

const APP = 'http://127.0.0.1:5173';
let bridge: Bridge;
let base: string;
const logs: string[] = [];

beforeAll(async () => {
  bridge = await startBridge({ port: 0, appOrigin: APP, log: (l) => logs.push(l) });
  base = `http://127.0.0.1:${bridge.port}`;
});
afterAll(() => bridge.close());

/** A scripted tab: its socket, the messages and body bytes it received, and a way to reply. */
interface FakeTab {
  ws: WebSocket;
  messages: BridgeMessage[];
  bodies: Map<number, number>;
  next(type: BridgeMessage['type']): Promise<BridgeMessage>;
  send(msg: TabMessage): void;
}

function open(origin = APP): WebSocket {
  return new WebSocket(`ws://127.0.0.1:${bridge.port}${TAB_PATH}`, { origin });
}

const closed = (ws: WebSocket) => new Promise<number>((r) => ws.on('close', (code) => r(code)));

async function pair(code: string): Promise<{ code: number; credential: string | null }> {
  const ws = open();
  let credential: string | null = null;
  ws.on('open', () => ws.send(JSON.stringify({ type: 'hello', code })));
  ws.on('message', (d) => {
    const m = parseBridgeMessage(String(d));
    if (m?.type === 'paired') credential = m.credential;
  });
  return { code: await closed(ws), credential };
}

async function connectTab(credential: string): Promise<FakeTab> {
  const ws = open();
  const messages: BridgeMessage[] = [];
  const bodies = new Map<number, number>();
  const waiters: (() => void)[] = [];
  ws.on('message', (data, isBinary) => {
    if (isBinary) {
      const c = decodeChunk(new Uint8Array(data as Buffer))!;
      bodies.set(c.id, (bodies.get(c.id) ?? 0) + c.bytes.byteLength);
      ws.send(JSON.stringify({ type: 'ack', id: c.id, bytes: c.bytes.byteLength }));
      return;
    }
    messages.push(parseBridgeMessage(String(data))!);
    for (const w of waiters.splice(0)) w();
  });
  await new Promise((r) => ws.on('open', r));
  const tab: FakeTab = {
    ws,
    messages,
    bodies,
    send: (m) => ws.send(JSON.stringify(m)),
    async next(type) {
      for (;;) {
        const i = messages.findIndex((m) => m.type === type);
        if (i >= 0) return messages.splice(i, 1)[0];
        await new Promise<void>((r) => waiters.push(r));
      }
    },
  };
  ws.send(JSON.stringify({ type: 'hello', credential }));
  await Promise.race([tab.next('ready'), closed(ws).then((code) => Promise.reject(new Error(`closed with ${code}`)))]);
  return tab;
}

/** A raw HTTP request (Origin and Host as given), its status, headers and body text. */
function call(
  path: string,
  opts: { method?: string; headers?: Record<string, string>; body?: Buffer | string; signal?: AbortSignal } = {},
) {
  return new Promise<{ status: number; headers: Record<string, unknown>; text: string }>((resolve, reject) => {
    const req = request(`${base}${path}`, { method: opts.method ?? 'GET', headers: opts.headers, signal: opts.signal }, (res) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, text }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(opts.body);
  });
}

let credential = '';

describe('pairing', () => {
  it('refuses a socket from another origin, a wrong code, and then pairs with the printed code', async () => {
    const foreign = open('https://example.com');
    const refused = await new Promise<number>((r) => foreign.on('unexpected-response', (_req, res) => r(res.statusCode!)));
    expect(refused).toBe(403);

    expect(await pair('WRNG-CODE')).toEqual({ code: CLOSE.wrongCode, credential: null });
    const code = new URL(bridge.link()!).hash.split('code=')[1];
    const paired = await pair(code);
    expect(paired.code).toBe(CLOSE.paired);
    credential = paired.credential!;
    expect(credential.length).toBeGreaterThan(30);
    // Spent: the same code does not pair twice.
    expect((await pair(code)).code).toBe(CLOSE.pairingClosed);
    await expect(connectTab('not-it')).rejects.toThrow(`closed with ${CLOSE.unknownCredential}`);
    // Nothing secret reaches the terminal.
    expect(logs.join('\n')).not.toContain(code);
    expect(logs.join('\n')).not.toContain(credential);
  });
});

describe('relaying', () => {
  it('answers 503 in the family shape while no tab is connected, and 404 off /v1', async () => {
    const chat = await call('/v1/chat/completions', { method: 'POST', body: '{}' });
    expect(chat.status).toBe(503);
    expect(JSON.parse(chat.text).error).toMatchObject({ type: 'ServiceUnavailableError', code: 503 });
    expect(JSON.parse(chat.text).error.message).toContain('open the Hearth app (http://127.0.0.1:5173)');
    const preview = await call('/v1/preview/models');
    expect(preview.status).toBe(503);
    expect(JSON.parse(preview.text).detail).toContain('open the Hearth app');
    expect((await call('/index.html')).status).toBe(404);
  });

  it('refuses a foreign Origin or Host with 403 before anything reaches the tab', async () => {
    const tab = await connectTab(credential);
    expect((await call('/v1/models', { headers: { Origin: 'https://example.com' } })).status).toBe(403);
    expect((await call('/v1/models', { headers: { Origin: 'null' } })).status).toBe(403);
    expect((await call('/v1/models', { headers: { Host: `evil.example:${bridge.port}` } })).status).toBe(403);
    expect(tab.messages.filter((m) => m.type === 'request')).toEqual([]);
    tab.ws.close();
    await closed(tab.ws);
  });

  it('relays method, path, query and headers (Authorization unchanged, hop headers dropped), then the response', async () => {
    const tab = await connectTab(credential);
    const answer = call('/v1/chat/completions?x=1&y=%20', {
      method: 'POST',
      headers: {
        Authorization: 'Bearer sk-abc',
        'Content-Type': 'application/json',
        'X-Stainless-Retry-Count': '0',
        Origin: APP,
        Cookie: 'a=b',
      },
      body: '{"model":"m"}',
    });
    const req = (await tab.next('request')) as Extract<BridgeMessage, { type: 'request' }>;
    expect(req).toMatchObject({ method: 'POST', path: '/v1/chat/completions?x=1&y=%20', body: true });
    const names = req.headers.map(([k]) => k.toLowerCase());
    expect(req.headers).toContainEqual(['Authorization', 'Bearer sk-abc']);
    expect(req.headers).toContainEqual(['X-Stainless-Retry-Count', '0']);
    for (const hop of ['host', 'origin', 'cookie', 'content-length', 'connection']) expect(names).not.toContain(hop);
    await tab.next('end');
    expect(tab.bodies.get(req.id)).toBe(13);
    tab.send({
      type: 'head',
      id: req.id,
      status: 201,
      headers: [
        ['content-type', 'application/json'],
        ['x-request-id', 'r1'],
        ['content-length', '999'],
      ],
    });
    tab.ws.send(encodeChunk(req.id, new TextEncoder().encode('{"ok":')));
    tab.ws.send(encodeChunk(req.id, new TextEncoder().encode('true}')));
    tab.send({ type: 'end', id: req.id });
    const res = await answer;
    expect(res).toMatchObject({ status: 201, text: '{"ok":true}' });
    expect(res.headers['x-request-id']).toBe('r1');
    tab.ws.close();
    await closed(tab.ws);
  });

  it('sends a body just past its cap, so the app answers 413 as it would for a page', async () => {
    const tab = await connectTab(credential);
    const big = Buffer.alloc(DEFAULT_MAX_BODY_BYTES + 3 * 1024 * 1024, 120);
    const answer = call('/v1/preview/models', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: big });
    const req = await tab.next('request');
    await tab.next('end');
    expect(tab.bodies.get((req as { id: number }).id)).toBe(DEFAULT_MAX_BODY_BYTES + 1);
    tab.send({ type: 'head', id: (req as { id: number }).id, status: 413, headers: [['content-type', 'application/json']] });
    tab.send({ type: 'end', id: (req as { id: number }).id });
    expect((await answer).status).toBe(413);
    tab.ws.close();
    await closed(tab.ws);
  });

  it('tells the tab to abort when the client goes away', async () => {
    const tab = await connectTab(credential);
    const controller = new AbortController();
    const answer = call('/v1/chat/completions', { method: 'POST', body: '{}', signal: controller.signal }).catch((e: Error) => e.name);
    const req = await tab.next('request');
    controller.abort();
    expect(await answer).toBe('AbortError');
    expect(await tab.next('abort')).toEqual({ type: 'abort', id: (req as { id: number }).id });
    tab.ws.close();
    await closed(tab.ws);
  });

  it('a tab that leaves mid-stream ends an SSE stream with an error event and [DONE], a waiting request with 503', async () => {
    const tab = await connectTab(credential);
    const stream = call('/v1/chat/completions', { method: 'POST', body: '{"stream":true}' });
    const waiting = call('/v1/preview/models');
    const s = (await tab.next('request')) as { id: number };
    await tab.next('request');
    tab.send({ type: 'head', id: s.id, status: 200, headers: [['content-type', 'text/event-stream']] });
    tab.ws.send(encodeChunk(s.id, new TextEncoder().encode('data: {"a":1}\n\ndata: {"b"')));
    await new Promise((r) => setTimeout(r, 50));
    tab.ws.terminate();
    const streamed = await stream;
    expect(streamed.status).toBe(200);
    const events = streamed.text.split('\n\n').filter(Boolean);
    expect(events[0]).toBe('data: {"a":1}');
    expect(events.at(-1)).toBe('data: [DONE]');
    expect(JSON.parse(events.at(-2)!.slice(6)).error).toMatchObject({ code: 503 });
    expect(events.at(-2)).toContain('closed or reloaded');
    const queued = await waiting;
    expect(queued.status).toBe(503);
    expect(JSON.parse(queued.text).detail).toContain('closed or reloaded');
  });

  it('a tab that sends an oversized frame loses its socket, and the bridge goes on', async () => {
    const tab = await connectTab(credential);
    tab.ws.send(Buffer.alloc(3 * 1024 * 1024));
    expect(await closed(tab.ws)).toBe(1009);
    expect((await call('/v1/models')).status).toBe(503);
  });

  it('Disconnect revokes the credential and prints a fresh pairing link', async () => {
    const tab = await connectTab(credential);
    tab.send({ type: 'unpair' });
    expect(await closed(tab.ws)).toBe(CLOSE.unpaired);
    expect(logs.at(-1)).toContain(bridge.link()!);
    expect((await pair('NOPE-NOPE')).code).toBe(CLOSE.wrongCode);
    const again = open();
    again.on('open', () => again.send(JSON.stringify({ type: 'hello', credential })));
    expect(await closed(again)).toBe(CLOSE.unknownCredential);
  });
});
