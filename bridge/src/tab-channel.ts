/**
 * The bridge's side of the tab socket: accepts WebSocket upgrades from the app's origin only,
 * pairs a tab with the one-time code or resumes one with its credential, keeps the one socket
 * that relays (a newer resumed socket replaces an older one, as after a reload), and hands each
 * incoming message to the relay of its request id. When the relaying socket closes, every relay
 * still open on it hears `tabGone()`, so no request waits for a tab that is not there.
 *
 * Not here: the HTTP side of a request (relay.ts), the code and credential (pairing.ts).
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type RawData, type WebSocket } from 'ws';
import type { Pairing } from './pairing';
import { CLOSE, TAB_PATH, decodeChunk, encodeChunk, parseTabMessage, type BridgeMessage, type HeaderList } from './protocol';

/** What a relay hears from the tab about its request. */
export interface RelayEndpoint {
  onHead(status: number, headers: HeaderList): void;
  onChunk(bytes: Uint8Array): void;
  onEnd(): void;
  onFail(message: string): void;
  onAck(bytes: number): void;
  onTabGone(): void;
}

/** How long a new socket has to say hello. */
const HELLO_MS = 10_000;
/** Largest frame a tab may send (it splits bodies into smaller pieces). */
const MAX_FRAME_BYTES = 2 * 1024 * 1024;

/** One accepted, relaying tab socket and the requests open on it. */
export class TabSession {
  readonly relays = new Map<number, RelayEndpoint>();
  constructor(private readonly ws: WebSocket) {}

  send(msg: BridgeMessage): void {
    if (this.ws.readyState === this.ws.OPEN) this.ws.send(JSON.stringify(msg));
  }

  sendChunk(id: number, bytes: Uint8Array): void {
    if (this.ws.readyState === this.ws.OPEN) this.ws.send(encodeChunk(id, bytes));
  }

  close(code: number, reason: string): void {
    this.ws.close(code, reason);
  }
}

export interface TabChannelOptions {
  appOrigin: string;
  pairing: Pairing;
  /** One line for the terminal: never a code, credential, header or body. */
  log(line: string): void;
  /** After Disconnect, with the fresh pairing code. */
  onUnpaired(code: string): void;
}

export class TabChannel {
  private readonly wss = new WebSocketServer({ noServer: true, maxPayload: MAX_FRAME_BYTES });
  private current: TabSession | null = null;

  constructor(private readonly opts: TabChannelOptions) {}

  /** The relaying tab, or null when none is connected. */
  get session(): TabSession | null {
    return this.current;
  }

  /** An HTTP upgrade: only to TAB_PATH, only from the app's origin (browsers always send Origin on WebSockets). */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const path = new URL(req.url ?? '/', 'http://bridge').pathname;
    if (path !== TAB_PATH || req.headers.origin !== this.opts.appOrigin) {
      socket.end('HTTP/1.1 403 Forbidden\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    this.wss.handleUpgrade(req, socket, head, (ws) => this.greet(ws));
  }

  close(): void {
    for (const ws of this.wss.clients) ws.terminate();
    this.wss.close();
  }

  /** Waits for the hello: a code pairs (and the socket closes), a credential makes the socket the relaying one. */
  private greet(ws: WebSocket): void {
    // A broken or oversized frame is an 'error' event: the socket ends, the bridge goes on.
    ws.on('error', () => ws.terminate());
    const timer = setTimeout(() => ws.close(CLOSE.protocol, 'No hello.'), HELLO_MS);
    ws.once('close', () => clearTimeout(timer));
    ws.once('message', (data, isBinary) => {
      clearTimeout(timer);
      const hello = isBinary ? null : parseTabMessage(rawText(data));
      if (hello?.type !== 'hello') return ws.close(CLOSE.protocol, 'The first message must be a hello.');
      if ('code' in hello) {
        const result = this.opts.pairing.pair(hello.code);
        if (!result.ok) {
          this.opts.log(
            result.reason === 'closed'
              ? 'A tab tried to pair, but pairing is closed (too many wrong codes): restart the bridge to pair.'
              : 'A tab tried to pair with a wrong code.',
          );
          return ws.close(
            result.reason === 'closed' ? CLOSE.pairingClosed : CLOSE.wrongCode,
            result.reason === 'closed' ? 'Pairing is closed: restart the bridge.' : 'Wrong pairing code.',
          );
        }
        this.opts.log('Paired with a Hearth tab.');
        ws.send(JSON.stringify({ type: 'paired', credential: result.credential } satisfies BridgeMessage));
        return ws.close(CLOSE.paired, 'Paired.');
      }
      if (!this.opts.pairing.accepts(hello.credential)) return ws.close(CLOSE.unknownCredential, 'Unknown credential: pair again.');
      this.adopt(ws);
    });
  }

  private adopt(ws: WebSocket): void {
    const previous = this.current;
    const session = new TabSession(ws);
    this.current = session;
    if (previous) {
      previous.close(CLOSE.replaced, 'Another tab of the app took over.');
      this.endSession(previous);
    }
    this.opts.log('A Hearth tab is connected: requests are relayed to it.');
    ws.on('message', (data, isBinary) => this.receive(session, data, isBinary));
    ws.on('close', () => {
      if (this.current === session) {
        this.current = null;
        this.opts.log('The Hearth tab disconnected: requests get 503 until it is back.');
      }
      this.endSession(session);
    });
    session.send({ type: 'ready' });
  }

  private endSession(session: TabSession): void {
    const relays = [...session.relays.values()];
    session.relays.clear();
    for (const r of relays) r.onTabGone();
  }

  private receive(session: TabSession, data: RawData, isBinary: boolean): void {
    if (isBinary) {
      const chunk = decodeChunk(rawBytes(data));
      if (chunk) session.relays.get(chunk.id)?.onChunk(chunk.bytes);
      return;
    }
    const msg = parseTabMessage(rawText(data));
    if (!msg) return session.close(CLOSE.protocol, 'Malformed message.');
    switch (msg.type) {
      case 'hello':
        return;
      case 'unpair': {
        const code = this.opts.pairing.unpair();
        session.close(CLOSE.unpaired, 'Disconnected.');
        this.opts.onUnpaired(code);
        return;
      }
      case 'head':
        return session.relays.get(msg.id)?.onHead(msg.status, msg.headers);
      case 'end':
        return session.relays.get(msg.id)?.onEnd();
      case 'fail':
        return session.relays.get(msg.id)?.onFail(msg.message);
      case 'ack':
        return session.relays.get(msg.id)?.onAck(msg.bytes);
    }
  }
}

function rawBytes(data: RawData): Uint8Array {
  if (Array.isArray(data)) return Buffer.concat(data);
  return data instanceof ArrayBuffer ? new Uint8Array(data) : data;
}

function rawText(data: RawData): string {
  return Buffer.from(rawBytes(data)).toString('utf8');
}
