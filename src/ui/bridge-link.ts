/**
 * This tab's link to the loopback bridge (`npm run bridge`): pairing with the one-time code, the
 * credential kept in localStorage so the app reconnects by itself after a reload (until
 * Disconnect), and the relaying socket. One tab of the app relays at a time: it holds the Web
 * Lock `hearth-bridge`; when it closes, the next tab of the app that waits for the lock takes
 * over. The tabs tell each other about a new pairing, a Disconnect and the relaying tab's
 * counters on the BroadcastChannel `hearth-bridge`.
 *
 * Nothing else in the app knows the bridge exists: the Bridge view pairs, the Settings panel
 * shows this status, and main.ts starts the link at boot.
 *
 * Not here: replaying one request (bridge-relay.ts), the wire format (bridge/src/protocol.ts).
 */
import type { ReactiveController, ReactiveControllerHost } from 'lit';
import {
  CLOSE,
  TAB_PATH,
  decodeChunk,
  encodeChunk,
  parseBridgeMessage,
  type BridgeMessage,
  type TabMessage,
} from '../../bridge/src/protocol';
import { TabRelay } from './bridge-relay';

export interface BridgeStatus {
  /**
   * off: not paired; connecting; connected: this tab relays; elsewhere: another tab of the app
   * relays; retrying: paired, but the bridge does not answer now.
   */
  state: 'off' | 'connecting' | 'connected' | 'elsewhere' | 'retrying';
  port: number | null;
  /** Requests relayed to their end by the relaying tab since it connected. */
  served: number;
  inFlight: number;
  /** Why the link is as it is, when that needs saying (a refused credential, an unreachable bridge). */
  message: string;
}

interface Saved {
  port: number;
  credential: string;
}

const STORE_KEY = 'hearth-bridge';
const LOCK = 'hearth-bridge';
/** Longest wait between two tries to reach a bridge that does not answer. */
const MAX_RETRY_MS = 10_000;

type ChannelNote = { type: 'changed' } | { type: 'disconnect' } | { type: 'status'; status: BridgeStatus };

function loadSaved(): Saved | null {
  try {
    const v = JSON.parse(localStorage.getItem(STORE_KEY) ?? 'null') as Saved | null;
    return v && Number.isInteger(v.port) && typeof v.credential === 'string' ? v : null;
  } catch {
    return null;
  }
}

const socketUrl = (port: number) => `ws://127.0.0.1:${port}${TAB_PATH}`;

/** Why a pairing socket closed, in words for the Bridge view. */
function pairingRefusal(code: number): string {
  if (code === CLOSE.wrongCode) return 'The pairing code is wrong. Open the exact link the bridge printed.';
  if (code === CLOSE.pairingClosed)
    return 'The bridge closed pairing (too many wrong codes, or it is already paired). Restart the bridge and open the new link.';
  return 'The bridge did not answer. Is `npm run bridge` running on this port, and was it started with --app set to this address?';
}

export class BridgeLink extends EventTarget {
  status: BridgeStatus = { state: 'off', port: null, served: 0, inFlight: 0, message: '' };
  private ws: WebSocket | null = null;
  private readonly relays = new Map<number, TabRelay>();
  private queued = false;
  /** Whether this tab holds the lock (it relays, or tries to): it tells the other tabs its status. */
  private holding = false;
  private readonly channel = new BroadcastChannel(LOCK);

  constructor() {
    super();
    this.channel.onmessage = (e: MessageEvent<ChannelNote>) => this.onNote(e.data);
    // Closing (or reloading) tab: the bridge hears it before this page's fetches are torn down,
    // so its open requests end saying the tab left rather than with the fetch failures.
    addEventListener('pagehide', () => this.ws?.close(1000, 'The tab is closing.'));
  }

  /** At boot: a tab of a paired app waits for its turn to relay. */
  start(): void {
    const saved = loadSaved();
    if (!saved) return;
    this.update({ state: 'elsewhere', port: saved.port });
    this.queue();
  }

  /** Trades the one-time `code` for a credential; throws with a message to show when the bridge refuses. */
  async pair(port: number, code: string): Promise<void> {
    const credential = await new Promise<string>((resolve, reject) => {
      const ws = new WebSocket(socketUrl(port));
      let got: string | null = null;
      ws.onopen = () => ws.send(JSON.stringify({ type: 'hello', code } satisfies TabMessage));
      ws.onmessage = (e) => {
        const msg = typeof e.data === 'string' ? parseBridgeMessage(e.data) : null;
        if (msg?.type === 'paired') got = msg.credential;
      };
      ws.onclose = (e) => (got ? resolve(got) : reject(new Error(pairingRefusal(e.code))));
    });
    localStorage.setItem(STORE_KEY, JSON.stringify({ port, credential } satisfies Saved));
    this.update({ port, message: '' });
    this.channel.postMessage({ type: 'changed' } satisfies ChannelNote);
    this.onNote({ type: 'changed' });
  }

  /** Disconnect: the bridge revokes the credential, and no tab of the app reconnects. */
  disconnect(): void {
    localStorage.removeItem(STORE_KEY);
    this.channel.postMessage({ type: 'disconnect' } satisfies ChannelNote);
    this.onNote({ type: 'disconnect' });
  }

  private onNote(note: ChannelNote): void {
    if (note.type === 'status') {
      if (!this.holding) this.update({ ...note.status, state: note.status.state === 'off' ? 'off' : 'elsewhere' });
      return;
    }
    if (note.type === 'disconnect') {
      this.send({ type: 'unpair' });
      this.ws?.close();
      this.update({ state: 'off', port: null, served: 0, inFlight: 0, message: '' });
      return;
    }
    // A new pairing: the relaying tab reconnects with the new credential; a tab not in line joins it.
    if (this.ws) this.ws.close(1000, 'New pairing.');
    else if (!this.holding) this.update({ state: 'elsewhere', port: loadSaved()?.port ?? null });
    this.queue();
  }

  private queue(): void {
    if (this.queued) return;
    this.queued = true;
    void navigator.locks.request(LOCK, () => this.serve()).finally(() => (this.queued = false));
  }

  /** While this tab holds the lock: connect, relay, and reconnect after drops, until there is no credential. */
  private async serve(): Promise<void> {
    this.holding = true;
    try {
      await this.serveHeld();
    } finally {
      this.holding = false;
    }
  }

  private async serveHeld(): Promise<void> {
    // Relayed requests go through the Service Worker: wait until it controls this page.
    while (
      !(await globalThis.hearth.ready().then(
        () => true,
        () => false,
      ))
    );
    let delay = 500;
    for (;;) {
      const saved = loadSaved();
      if (!saved) return this.update({ state: 'off', port: null, inFlight: 0 });
      this.update({ state: 'connecting', port: saved.port, served: 0, inFlight: 0 });
      const { code, ready } = await this.connect(saved);
      if (code === CLOSE.unknownCredential) {
        // The bridge restarted (or was paired anew elsewhere): this credential is dead.
        if (loadSaved()?.credential === saved.credential) localStorage.removeItem(STORE_KEY);
        if (!loadSaved())
          return this.update({
            state: 'off',
            port: null,
            message: 'The bridge no longer knows this tab (it restarted): open the new link it printed to pair again.',
          });
        continue;
      }
      if (code === CLOSE.unpaired) return;
      if (code === CLOSE.replaced) {
        this.update({ state: 'elsewhere' });
        await new Promise((r) => setTimeout(r, 5000));
        continue;
      }
      if (ready) delay = 500;
      if (!loadSaved()) continue;
      if (code !== 1000) {
        this.update({ state: 'retrying', message: `The bridge on port ${saved.port} does not answer; retrying.` });
        await new Promise((r) => setTimeout(r, delay));
        delay = Math.min(delay * 2, MAX_RETRY_MS);
      }
    }
  }

  /** One relaying socket, from hello to close; resolves with the close code and whether it ever relayed. */
  private connect(saved: Saved): Promise<{ code: number; ready: boolean }> {
    return new Promise((resolve) => {
      const ws = new WebSocket(socketUrl(saved.port));
      ws.binaryType = 'arraybuffer';
      this.ws = ws;
      let ready = false;
      ws.onopen = () => ws.send(JSON.stringify({ type: 'hello', credential: saved.credential } satisfies TabMessage));
      ws.onmessage = (e: MessageEvent<string | ArrayBuffer>) => {
        if (typeof e.data !== 'string') {
          const chunk = decodeChunk(new Uint8Array(e.data));
          if (chunk) this.relays.get(chunk.id)?.onChunk(chunk.bytes);
          return;
        }
        const msg = parseBridgeMessage(e.data);
        if (!msg) return;
        if (msg.type === 'ready') {
          ready = true;
          this.update({ state: 'connected', message: '' });
        } else if (msg.type === 'request') this.relay(msg);
        else if (msg.type === 'end') this.relays.get(msg.id)?.onEnd();
        else if (msg.type === 'abort') this.relays.get(msg.id)?.abort();
        else if (msg.type === 'ack') this.relays.get(msg.id)?.onAck(msg.bytes);
      };
      ws.onclose = (e) => {
        this.ws = null;
        // The bridge is gone, and with it every client of these requests.
        for (const r of this.relays.values()) r.abort();
        this.relays.clear();
        this.update({ inFlight: 0 });
        resolve({ code: e.code, ready });
      };
    });
  }

  private relay(msg: Extract<BridgeMessage, { type: 'request' }>): void {
    const relay = new TabRelay(msg, {
      send: (m) => this.send(m),
      sendChunk: (id, bytes) => this.ws?.readyState === WebSocket.OPEN && this.ws.send(encodeChunk(id, bytes)),
    });
    this.relays.set(msg.id, relay);
    this.update({ inFlight: this.relays.size });
    void relay.run().finally(() => {
      if (this.relays.get(msg.id) !== relay) return;
      this.relays.delete(msg.id);
      this.update({ inFlight: this.relays.size, served: this.status.served + 1 });
    });
  }

  private send(msg: TabMessage): void {
    if (this.ws?.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(msg));
  }

  private update(change: Partial<BridgeStatus>): void {
    this.status = { ...this.status, ...change };
    this.dispatchEvent(new Event('change'));
    if (this.holding) this.channel.postMessage({ type: 'status', status: this.status } satisfies ChannelNote);
  }
}

/** The tab's one link (main.ts starts it; the Bridge view and the Settings panel read and drive it). */
export const bridgeLink = new BridgeLink();

/** Re-renders its host whenever the link's status changes. */
export class BridgeStatusController implements ReactiveController {
  private readonly onChange = () => this.host.requestUpdate();
  constructor(private readonly host: ReactiveControllerHost) {
    host.addController(this);
  }
  get status(): BridgeStatus {
    return bridgeLink.status;
  }
  hostConnected(): void {
    bridgeLink.addEventListener('change', this.onChange);
  }
  hostDisconnected(): void {
    bridgeLink.removeEventListener('change', this.onChange);
  }
}
