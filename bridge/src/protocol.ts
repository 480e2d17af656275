/**
 * The wire between the bridge (Node) and the paired tab (the Hearth app): one WebSocket, on
 * which control messages travel as JSON text frames and body bytes as binary frames
 * `[request id: u32 big-endian][bytes]` (the direction says whose body it is: bridge -> tab is a
 * request body, tab -> bridge a response body). Both ends import this file, so it has no
 * imports and touches neither Node nor DOM APIs.
 *
 * Flow control is a credit window per body: a sender keeps at most WINDOW_BYTES unacknowledged,
 * and the receiver acknowledges what its consumer actually took (the tab: what fetch pulled from
 * the request body; the bridge: what the HTTP client's socket accepted). So a slow consumer
 * slows the producer instead of filling memory, in both directions.
 *
 * Not here: the HTTP side (bridge/src/relay.ts), replaying in the tab (src/ui/bridge-relay.ts).
 */

/** Path of the bridge's WebSocket endpoint (the tab connects to ws://127.0.0.1:<port><TAB_PATH>). */
export const TAB_PATH = '/hearth-bridge/tab';

/** Most unacknowledged body bytes a sender keeps in flight per request. */
export const WINDOW_BYTES = 4 * 1024 * 1024;

/** Close codes the bridge ends a tab socket with (4000-4999 are the application's). */
export const CLOSE = {
  /** The tab pressed Disconnect: its credential is revoked. */
  unpaired: 4000,
  /** The credential is not this bridge's (it restarted, or another pairing replaced it): pair again. */
  unknownCredential: 4001,
  /** Another tab of the app connected with the credential; this socket is no longer used. */
  replaced: 4002,
  /** The pairing code is wrong. */
  wrongCode: 4003,
  /** Too many wrong codes: pairing is closed until the bridge restarts. */
  pairingClosed: 4004,
  /** The first message was not a hello, or a message did not parse. */
  protocol: 4005,
  /** A pairing socket's job is done (it got its credential). */
  paired: 4006,
} as const;

export type HeaderList = [string, string][];

/** Tab -> bridge. */
export type TabMessage =
  /** First message of a socket: pair with the one-time code, or resume with the credential. */
  | { type: 'hello'; code: string }
  | { type: 'hello'; credential: string }
  /** The response to request `id` begins. */
  | { type: 'head'; id: number; status: number; headers: HeaderList }
  /** The response body of `id` is complete. */
  | { type: 'end'; id: number }
  /** The tab could not get a response for `id` (its fetch failed); `message` says why. */
  | { type: 'fail'; id: number; message: string }
  /** The tab consumed `bytes` of request `id`'s body. */
  | { type: 'ack'; id: number; bytes: number }
  /** Disconnect: revoke the credential. */
  | { type: 'unpair' };

/** Bridge -> tab. */
export type BridgeMessage =
  /** Pairing worked: keep `credential` to reconnect (it is valid until Disconnect or the bridge stops). */
  | { type: 'paired'; credential: string }
  /** The credential was accepted: this socket relays from now on. */
  | { type: 'ready' }
  /** A request to replay; `body` says whether body frames and an `end` follow. */
  | { type: 'request'; id: number; method: string; path: string; headers: HeaderList; body: boolean }
  /** Request `id`'s body is complete. */
  | { type: 'end'; id: number }
  /** The HTTP client went away: abort request `id`. */
  | { type: 'abort'; id: number }
  /** The client consumed `bytes` of response `id`'s body. */
  | { type: 'ack'; id: number; bytes: number };

const isId = (v: unknown): v is number => Number.isInteger(v) && (v as number) >= 0 && (v as number) <= 0xffffffff;
const isHeaders = (v: unknown): v is HeaderList =>
  Array.isArray(v) && v.every((h) => Array.isArray(h) && h.length === 2 && typeof h[0] === 'string' && typeof h[1] === 'string');

/** The message `text` holds if it is a well-formed tab message, else null (the peer is untrusted). */
export function parseTabMessage(text: string): TabMessage | null {
  const m = parseObject(text);
  if (!m) return null;
  switch (m.type) {
    case 'hello':
      if (typeof m.code === 'string' && m.code.length <= 64) return { type: 'hello', code: m.code };
      if (typeof m.credential === 'string' && m.credential.length <= 256) return { type: 'hello', credential: m.credential };
      return null;
    case 'head':
      return isId(m.id) && Number.isInteger(m.status) && (m.status as number) >= 100 && (m.status as number) <= 599 && isHeaders(m.headers)
        ? { type: 'head', id: m.id, status: m.status as number, headers: m.headers }
        : null;
    case 'end':
      return isId(m.id) ? { type: 'end', id: m.id } : null;
    case 'fail':
      return isId(m.id) && typeof m.message === 'string' ? { type: 'fail', id: m.id, message: m.message.slice(0, 1000) } : null;
    case 'ack':
      return isId(m.id) && isId(m.bytes) ? { type: 'ack', id: m.id, bytes: m.bytes } : null;
    case 'unpair':
      return { type: 'unpair' };
    default:
      return null;
  }
}

/** The message `text` holds if it is a well-formed bridge message, else null. */
export function parseBridgeMessage(text: string): BridgeMessage | null {
  const m = parseObject(text);
  if (!m) return null;
  switch (m.type) {
    case 'paired':
      return typeof m.credential === 'string' ? { type: 'paired', credential: m.credential } : null;
    case 'ready':
      return { type: 'ready' };
    case 'request':
      return isId(m.id) &&
        typeof m.method === 'string' &&
        typeof m.path === 'string' &&
        m.path.startsWith('/') &&
        isHeaders(m.headers) &&
        typeof m.body === 'boolean'
        ? { type: 'request', id: m.id, method: m.method, path: m.path, headers: m.headers, body: m.body }
        : null;
    case 'end':
    case 'abort':
      return isId(m.id) ? { type: m.type, id: m.id } : null;
    case 'ack':
      return isId(m.id) && isId(m.bytes) ? { type: 'ack', id: m.id, bytes: m.bytes } : null;
    default:
      return null;
  }
}

function parseObject(text: string): Record<string, unknown> | null {
  try {
    const v: unknown = JSON.parse(text);
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/** One binary frame: request `id`'s next body bytes. */
export function encodeChunk(id: number, bytes: Uint8Array): Uint8Array<ArrayBuffer> {
  const frame = new Uint8Array(4 + bytes.byteLength);
  new DataView(frame.buffer).setUint32(0, id);
  frame.set(bytes, 4);
  return frame;
}

/** The request id and body bytes of a binary frame (a view, not a copy), or null if it is too short. */
export function decodeChunk(frame: Uint8Array): { id: number; bytes: Uint8Array } | null {
  if (frame.byteLength < 4) return null;
  const id = new DataView(frame.buffer, frame.byteOffset, 4).getUint32(0);
  return { id, bytes: frame.subarray(4) };
}

/**
 * The sender's side of one body's credit window: `reserve(n)` waits while WINDOW_BYTES or more
 * are unacknowledged, `ack(n)` gives credit back, `close()` releases every waiter for good (the
 * request ended or was aborted; the sender then stops on its own check).
 */
export class CreditWindow {
  private unacked = 0;
  private waiters: (() => void)[] = [];
  private closed = false;

  constructor(private readonly limit = WINDOW_BYTES) {}

  /** Resolves once `bytes` more may be sent (at once when under the limit; a big chunk may overshoot it once). */
  async reserve(bytes: number): Promise<void> {
    while (!this.closed && this.unacked >= this.limit) await new Promise<void>((r) => this.waiters.push(r));
    this.unacked += bytes;
  }

  ack(bytes: number): void {
    this.unacked = Math.max(0, this.unacked - bytes);
    if (this.unacked < this.limit) this.wake();
  }

  close(): void {
    this.closed = true;
    this.wake();
  }

  /** Bytes sent and not yet acknowledged. */
  get pending(): number {
    return this.unacked;
  }

  private wake(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const r of w) r();
  }
}
