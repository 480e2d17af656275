/**
 * The bridge's command line: `hearth-bridge [--port N] [--app URL]`, with `PORT` as the port's
 * fallback. Pure (argv and env in, options or a usage error out), so it is unit-tested.
 *
 * Not here: starting anything (cli.ts).
 */
import { parseArgs } from 'node:util';

export const DEFAULT_PORT = 8787;
/** Where `npm start` serves the app. */
export const DEFAULT_APP = 'http://127.0.0.1:5173';

export interface BridgeOptions {
  /** TCP port on 127.0.0.1; 0 picks a free one (the pairing link names the real one). */
  port: number;
  /** The app's origin, e.g. http://127.0.0.1:5173: pairing links point there, and only it may pair. */
  appOrigin: string;
}

export const USAGE = `Usage: hearth-bridge [--port N] [--app URL]

Relays HTTP from programs on this computer (http://127.0.0.1:N/v1) to a paired Hearth tab.
  --port N    port on 127.0.0.1 (default: $PORT, else ${DEFAULT_PORT}; 0 picks a free port)
  --app URL   the Hearth app's address, as you open it in the browser (default ${DEFAULT_APP})
  --help      this text`;

export class UsageError extends Error {
  override name = 'UsageError';
}

/** The options `argv` (without node and the script) and `env` ask for; 'help' for --help. */
export function parseBridgeArgs(argv: readonly string[], env: Record<string, string | undefined>): BridgeOptions | 'help' {
  let values: { port?: string; app?: string; help?: boolean };
  try {
    ({ values } = parseArgs({
      args: [...argv],
      options: { port: { type: 'string' }, app: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
      strict: true,
      allowPositionals: false,
    }));
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  if (values.help) return 'help';
  return { port: portOf(values.port ?? env.PORT), appOrigin: originOf(values.app ?? DEFAULT_APP) };
}

function portOf(raw: string | undefined): number {
  if (raw === undefined || raw === '') return DEFAULT_PORT;
  const port = Number(raw);
  if (!/^\d+$/.test(raw.trim()) || !Number.isInteger(port) || port > 65535)
    throw new UsageError(`The port must be a whole number from 0 to 65535, not "${raw}".`);
  return port;
}

function originOf(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UsageError(`--app must be the app's URL, such as ${DEFAULT_APP}, not "${raw}".`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UsageError(`--app must be an http or https URL, not "${raw}".`);
  if (url.username || url.password) throw new UsageError('--app must not carry a user name or password.');
  return url.origin;
}

/** The pairing link the bridge prints: the app's Bridge view with the port and the one-time code. */
export function pairingLink(appOrigin: string, port: number, code: string): string {
  return `${appOrigin}/#/bridge?port=${port}&code=${code}`;
}
