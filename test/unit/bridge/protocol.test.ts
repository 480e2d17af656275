// The bridge's pure parts: the wire between bridge and tab (frames, message checks, the credit
// window), its command line, and pairing (one-time code, credential, wrong-code limit).
import { describe, expect, it } from 'vitest';
import { DEFAULT_PORT, UsageError, pairingLink, parseBridgeArgs } from '../../../bridge/src/args';
import { MAX_WRONG_CODES, Pairing, newPairingCode } from '../../../bridge/src/pairing';
import { CreditWindow, decodeChunk, encodeChunk, parseBridgeMessage, parseTabMessage } from '../../../bridge/src/protocol';

describe('frames', () => {
  it('a body chunk keeps its request id and bytes, whatever its size', () => {
    for (const [id, n] of [
      [0, 0],
      [1, 1],
      [0xffffffff, 70_000],
    ]) {
      const bytes = Uint8Array.from({ length: n }, (_, i) => (i * 31 + id) & 255);
      const frame = encodeChunk(id, bytes);
      expect(frame.byteLength).toBe(n + 4);
      const back = decodeChunk(frame)!;
      expect(back.id).toBe(id);
      expect(Array.from(back.bytes)).toEqual(Array.from(bytes));
    }
  });

  it('decodes a frame that sits inside a larger buffer, and refuses one shorter than its id', () => {
    const frame = encodeChunk(258, Uint8Array.of(9, 8, 7));
    const padded = new Uint8Array(frame.byteLength + 5);
    padded.set(frame, 5);
    expect(decodeChunk(padded.subarray(5))).toMatchObject({ id: 258 });
    expect(Array.from(decodeChunk(padded.subarray(5))!.bytes)).toEqual([9, 8, 7]);
    expect(decodeChunk(Uint8Array.of(1, 2, 3))).toBeNull();
  });
});

describe('messages', () => {
  it('accepts the tab messages the bridge understands', () => {
    expect(parseTabMessage('{"type":"hello","code":"K7Q2-9XPA"}')).toEqual({ type: 'hello', code: 'K7Q2-9XPA' });
    expect(parseTabMessage('{"type":"hello","credential":"abc"}')).toEqual({ type: 'hello', credential: 'abc' });
    expect(parseTabMessage('{"type":"head","id":3,"status":200,"headers":[["content-type","text/event-stream"]]}')).toEqual({
      type: 'head',
      id: 3,
      status: 200,
      headers: [['content-type', 'text/event-stream']],
    });
    expect(parseTabMessage('{"type":"ack","id":3,"bytes":65536}')).toEqual({ type: 'ack', id: 3, bytes: 65536 });
    expect(parseTabMessage('{"type":"unpair"}')).toEqual({ type: 'unpair' });
  });

  it('refuses malformed tab messages (the peer is untrusted)', () => {
    for (const text of [
      'not json',
      '[]',
      'null',
      '{"type":"nope"}',
      '{"type":"hello"}',
      `{"type":"hello","code":"${'x'.repeat(65)}"}`,
      '{"type":"head","id":-1,"status":200,"headers":[]}',
      '{"type":"head","id":1,"status":99,"headers":[]}',
      '{"type":"head","id":1,"status":200,"headers":[["a"]]}',
      '{"type":"head","id":1,"status":200,"headers":[["a",1]]}',
      '{"type":"end","id":1.5}',
      '{"type":"ack","id":1,"bytes":-4}',
      '{"type":"fail","id":1}',
    ])
      expect(parseTabMessage(text), text).toBeNull();
  });

  it('accepts the bridge messages the tab understands and refuses the rest', () => {
    expect(
      parseBridgeMessage(
        '{"type":"request","id":1,"method":"POST","path":"/v1/chat/completions?x=1","headers":[["Authorization","Bearer k"]],"body":true}',
      ),
    ).toEqual({
      type: 'request',
      id: 1,
      method: 'POST',
      path: '/v1/chat/completions?x=1',
      headers: [['Authorization', 'Bearer k']],
      body: true,
    });
    expect(parseBridgeMessage('{"type":"abort","id":2}')).toEqual({ type: 'abort', id: 2 });
    expect(parseBridgeMessage('{"type":"paired","credential":"c"}')).toEqual({ type: 'paired', credential: 'c' });
    expect(parseBridgeMessage('{"type":"request","id":1,"method":"GET","path":"v1/models","headers":[],"body":false}')).toBeNull();
    expect(parseBridgeMessage('{"type":"request","id":1,"method":"GET","path":"/v1/models","headers":[]}')).toBeNull();
    expect(parseBridgeMessage('{"type":"abort"}')).toBeNull();
  });
});

describe('credit window', () => {
  it('holds a sender at the limit until the receiver acknowledges', async () => {
    const w = new CreditWindow(100);
    await w.reserve(60);
    await w.reserve(60); // under the limit when asked: may overshoot once
    let sent = false;
    const third = w.reserve(10).then(() => (sent = true));
    await Promise.resolve();
    expect(sent).toBe(false);
    w.ack(30); // 90 left: under the limit again
    await third;
    expect(w.pending).toBe(100);
  });

  it('releases a waiting sender for good once closed', async () => {
    const w = new CreditWindow(10);
    await w.reserve(10);
    const waiting = w.reserve(5);
    w.close();
    await waiting;
    await w.reserve(1000);
  });
});

describe('command line', () => {
  it('reads --port and --app, with PORT and the defaults behind them', () => {
    expect(parseBridgeArgs([], {})).toEqual({ port: DEFAULT_PORT, appOrigin: 'http://127.0.0.1:5173' });
    expect(parseBridgeArgs([], { PORT: '9000' })).toMatchObject({ port: 9000 });
    expect(parseBridgeArgs(['--port', '8788'], { PORT: '9000' })).toMatchObject({ port: 8788 });
    expect(parseBridgeArgs(['--port=0', '--app', 'https://hearth.example/app/?x#y'], {})).toEqual({
      port: 0,
      appOrigin: 'https://hearth.example',
    });
    expect(parseBridgeArgs(['--help'], {})).toBe('help');
  });

  it('says what is wrong with bad arguments', () => {
    for (const [argv, message] of [
      [['--port', '65536'], /0 to 65535/],
      [['--port', '12ab'], /whole number/],
      [['--port=-1'], /whole number/],
      [['--app', 'not a url'], /app's URL/],
      [['--app', 'ftp://x'], /http or https/],
      [['--app', 'http://u:p@x'], /user name/],
      [['--nope'], /Unknown option/],
      [['extra'], /positional/],
    ] as const)
      expect(() => parseBridgeArgs(argv, {}), argv.join(' ')).toThrow(message);
    expect(() => parseBridgeArgs(['--port', 'x'], {})).toThrow(UsageError);
  });

  it('prints the pairing link on the app origin', () => {
    expect(pairingLink('http://127.0.0.1:5173', 8787, 'K7Q2-9XPA')).toBe('http://127.0.0.1:5173/#/bridge?port=8787&code=K7Q2-9XPA');
  });
});

describe('pairing', () => {
  it('trades the code once for a credential, which then resumes the tab', () => {
    const p = new Pairing(() => 'ABCD-EFGH');
    expect(p.pendingCode).toBe('ABCD-EFGH');
    const first = p.pair('abcd-efgh');
    expect(first.ok).toBe(true);
    const credential = (first as { credential: string }).credential;
    expect(p.accepts(credential)).toBe(true);
    expect(p.accepts(`${credential}x`)).toBe(false);
    expect(p.pendingCode).toBeNull();
    expect(p.pair('ABCD-EFGH')).toEqual({ ok: false, reason: 'closed' });
  });

  it('Disconnect revokes the credential and opens a fresh code', () => {
    let n = 0;
    const p = new Pairing(() => `CODE-000${n++}`);
    const { credential } = p.pair('CODE-0000') as { credential: string };
    expect(p.unpair()).toBe('CODE-0001');
    expect(p.accepts(credential)).toBe(false);
    expect(p.pair('CODE-0001').ok).toBe(true);
  });

  it(`closes pairing after ${MAX_WRONG_CODES} wrong codes`, () => {
    const p = new Pairing(() => 'ABCD-EFGH');
    for (let i = 1; i < MAX_WRONG_CODES; i++) expect(p.pair('WXYZ-WXYZ')).toEqual({ ok: false, reason: 'wrong-code' });
    expect(p.pair('WXYZ-WXYZ')).toEqual({ ok: false, reason: 'closed' });
    expect(p.pair('ABCD-EFGH')).toEqual({ ok: false, reason: 'closed' });
  });

  it('makes codes of the printed shape from an unambiguous alphabet', () => {
    const codes = Array.from({ length: 200 }, newPairingCode);
    for (const c of codes) expect(c).toMatch(/^[A-HJKMNP-TW-Z2-9]{4}-[A-HJKMNP-TW-Z2-9]{4}$/);
    expect(new Set(codes).size).toBe(codes.length);
  });
});
