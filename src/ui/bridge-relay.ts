/**
 * One request from the bridge, replayed in this tab exactly as a page client would send it:
 * `fetch('/v1/...')` through the Service Worker, so keys, limits and errors apply unchanged. The
 * request body arrives in frames and is handed to fetch as a stream, acknowledged as fetch pulls
 * it; the response body goes back in pieces within the bridge's credit window, so SSE arrives
 * chunk by chunk. `abort()` (the HTTP client left, or the bridge went away) aborts the fetch,
 * which cancels the request in the engine as a page's abort does.
 *
 * Not here: the socket and pairing (bridge-link.ts); the wire format (bridge/src/protocol.ts).
 */
import { CreditWindow, type BridgeMessage, type TabMessage } from '../../bridge/src/protocol';

type RequestMessage = Extract<BridgeMessage, { type: 'request' }>;

/** Largest body piece per frame (the bridge refuses frames over 2 MiB). */
const PIECE_BYTES = 256 * 1024;

export interface RelayWire {
  send(msg: TabMessage): void;
  sendChunk(id: number, bytes: Uint8Array): void;
}

/** Whether `path` is a /v1 path of this origin (the bridge is trusted only so far). */
function isApiPath(path: string): boolean {
  const url = new URL(path, location.origin);
  return url.origin === location.origin && (url.pathname === '/v1' || url.pathname.startsWith('/v1/'));
}

export class TabRelay {
  private readonly aborter = new AbortController();
  private readonly window = new CreditWindow();
  private readonly queue: Uint8Array[] = [];
  private bodyEnded = false;
  private wake: (() => void) | null = null;

  constructor(
    private readonly msg: RequestMessage,
    private readonly wire: RelayWire,
  ) {}

  /** Replays the request and streams the response back; resolves when it is over, however it ended. */
  async run(): Promise<void> {
    const { id } = this.msg;
    let headSent = false;
    try {
      if (!isApiPath(this.msg.path)) throw new Error('only /v1 paths of the app are relayed');
      const headers = new Headers();
      for (const [k, v] of this.msg.headers) headers.append(k, v);
      const res = await fetch(this.msg.path, {
        method: this.msg.method,
        headers,
        body: this.msg.body ? this.requestBody() : undefined,
        // A streamed request body needs half duplex (the response is read after the body is sent).
        ...(this.msg.body ? { duplex: 'half' } : {}),
        signal: this.aborter.signal,
        cache: 'no-store',
        redirect: 'manual',
      });
      this.wire.send({ type: 'head', id, status: res.status, headers: [...res.headers] });
      headSent = true;
      if (res.body) {
        const reader = res.body.getReader();
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          for (let at = 0; at < value.byteLength; at += PIECE_BYTES) {
            const piece = value.subarray(at, at + PIECE_BYTES);
            await this.window.reserve(piece.byteLength);
            if (this.aborter.signal.aborted) {
              await reader.cancel().catch(() => undefined);
              return;
            }
            this.wire.sendChunk(id, piece);
          }
        }
      }
      this.wire.send({ type: 'end', id });
    } catch (err) {
      if (this.aborter.signal.aborted) return;
      this.wire.send({ type: 'fail', id, message: headSent ? 'the response body broke off' : (err as Error).message });
    } finally {
      this.window.close();
    }
  }

  onChunk(bytes: Uint8Array): void {
    // Copied: the frame's buffer belongs to the socket's message.
    this.queue.push(bytes.slice());
    this.poke();
  }

  onEnd(): void {
    this.bodyEnded = true;
    this.poke();
  }

  onAck(bytes: number): void {
    this.window.ack(bytes);
  }

  abort(): void {
    this.aborter.abort();
    this.window.close();
    this.bodyEnded = true;
    this.poke();
  }

  private poke(): void {
    const w = this.wake;
    this.wake = null;
    w?.();
  }

  /** The request body as fetch pulls it: each piece is acknowledged once fetch took it. */
  private requestBody(): ReadableStream<Uint8Array> {
    return new ReadableStream<Uint8Array>(
      {
        pull: async (controller) => {
          while (this.queue.length === 0 && !this.bodyEnded) await new Promise<void>((r) => (this.wake = r));
          const next = this.queue.shift();
          if (next) {
            controller.enqueue(next);
            this.wire.send({ type: 'ack', id: this.msg.id, bytes: next.byteLength });
          } else controller.close();
        },
        cancel: () => {
          this.bodyEnded = true;
        },
      },
      { highWaterMark: 0 },
    );
  }
}
