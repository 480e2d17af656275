/**
 * The bridge's HTTP server on 127.0.0.1: `/v1/...` is relayed to the paired tab, the tab's
 * WebSocket upgrades go to the tab channel, anything else is a 404. Two checks come first, since
 * a web page in any browser on this machine can also reach 127.0.0.1:
 * - a request carrying an `Origin` other than the app's is refused with 403 (a page of another
 *   site calling the bridge; programs such as curl or the Python SDK send no Origin);
 * - a `Host` other than 127.0.0.1:<port> or localhost:<port> is refused with 403 (a site that
 *   rebinds its own name to 127.0.0.1 to look same-origin).
 * Nothing of a request is logged: no header, no body.
 *
 * Not here: the relaying itself (relay.ts), the command line (cli.ts).
 */
import { createServer, type Server } from 'node:http';
import { pairingLink } from './args';
import { Pairing } from './pairing';
import { Relay, sendError } from './relay';
import { TabChannel } from './tab-channel';

export interface Bridge {
  server: Server;
  /** The port it listens on (the real one when asked for 0). */
  port: number;
  /** The pairing link for the code open now (one line, printed at start and after Disconnect). */
  link(): string | null;
  close(): Promise<void>;
}

export interface StartOptions {
  port: number;
  appOrigin: string;
  log(line: string): void;
}

export async function startBridge(opts: StartOptions): Promise<Bridge> {
  const pairing = new Pairing();
  let port = opts.port;
  const link = () => (pairing.pendingCode ? pairingLink(opts.appOrigin, port, pairing.pendingCode) : null);
  const channel = new TabChannel({
    appOrigin: opts.appOrigin,
    pairing,
    log: (line) => opts.log(line),
    onUnpaired: () => opts.log(`The tab disconnected the bridge. To pair again, open: ${link()}`),
  });
  const noTab = () =>
    `No Hearth tab is connected to this bridge: open the Hearth app (${opts.appOrigin}) in the browser you paired${pairing.paired ? '' : ' (pair it first with the link the bridge printed)'}, then retry.`;
  const tabLeft = `The Hearth tab closed or reloaded while this request was relayed: keep the Hearth app (${opts.appOrigin}) open, then retry.`;
  let nextId = 1;

  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://bridge');
    const origin = req.headers.origin;
    if (!hostAllowed(req.headers.host, port))
      return sendError(res, url.pathname, 403, 'The bridge answers only requests addressed to 127.0.0.1 or localhost.');
    if (origin !== undefined && origin !== opts.appOrigin)
      return sendError(res, url.pathname, 403, `Requests from web pages other than the Hearth app (${opts.appOrigin}) are refused.`);
    if (url.pathname !== '/v1' && !url.pathname.startsWith('/v1/')) {
      return sendError(res, url.pathname, 404, `The Hearth bridge relays /v1 only: use http://127.0.0.1:${port}/v1 as the base URL.`);
    }
    const session = channel.session;
    if (!session) {
      req.resume();
      return sendError(res, url.pathname, 503, noTab(), { 'Retry-After': '2' });
    }
    const id = nextId;
    nextId = nextId >= 0xffffffff ? 1 : nextId + 1;
    new Relay(req, res, session, id, tabLeft).start();
  });
  server.on('upgrade', (req, socket, head) => channel.handleUpgrade(req, socket, head));
  // Clients such as the Python SDK keep connections open; a long SSE stream must not be cut by Node's defaults.
  server.requestTimeout = 0;
  server.headersTimeout = 60_000;

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  port = (server.address() as { port: number }).port;
  return {
    server,
    port,
    link,
    close: () =>
      new Promise<void>((resolve) => {
        channel.close();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function hostAllowed(host: string | undefined, port: number): boolean {
  return host === `127.0.0.1:${port}` || host === `localhost:${port}`;
}
