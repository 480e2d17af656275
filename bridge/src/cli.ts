/**
 * `npm run bridge` / `npx hearth-bridge`: starts the loopback bridge and prints the pairing link
 * (one line), then one line per change of the tab connection. Ctrl-C stops it.
 *
 * Not here: option parsing (args.ts), the server (server.ts).
 */
import { USAGE, UsageError, parseBridgeArgs } from './args';
import { startBridge } from './server';

async function main(): Promise<void> {
  let options;
  try {
    options = parseBridgeArgs(process.argv.slice(2), process.env);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    console.error(`${err.message}\n\n${USAGE}`);
    process.exit(2);
  }
  if (options === 'help') {
    console.log(USAGE);
    return;
  }
  const log = (line: string) => console.log(`[hearth-bridge] ${line}`);
  let bridge;
  try {
    bridge = await startBridge({ ...options, log });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    console.error(
      code === 'EADDRINUSE' ? `Port ${options.port} is in use on 127.0.0.1: pick another with --port.` : (err as Error).message,
    );
    process.exit(1);
  }
  log(`Relaying http://127.0.0.1:${bridge.port}/v1 to a Hearth tab. Open this link in the browser that runs Hearth to pair it:`);
  console.log(bridge.link());
  const stop = () => void bridge.close().then(() => process.exit(0));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

void main();
