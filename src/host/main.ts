/**
 * The browser entry of the app (index.html): registers the Service Worker, joins the
 * engine-host election, installs `globalThis.hearth`, and mounts the UI shell.
 *
 * Not here: the engine (workers/engine.worker.ts), the views (src/ui).
 */
import { startEngineHosting } from './engine-host';
import { installPageHandle } from './page-handle';
import { registerServiceWorker } from './register-sw';
import { bridgeLink } from '../ui/bridge-link';
import '../ui/app-shell';

const hosting = startEngineHosting();
installPageHandle(hosting);
// A tab of an app paired with the loopback bridge (npm run bridge) relays for it again after a reload.
bridgeLink.start();
registerServiceWorker().catch((err: unknown) => {
  console.error('[hearth] Service Worker registration failed:', err);
  const message = err instanceof Error ? err.message : String(err);
  document.body.dataset.hearthError = message;
  // Without the Service Worker nothing answers /v1: say so at once rather than let every view
  // wait for hearth.ready() to time out.
  const notice = document.createElement('p');
  notice.id = 'hearth-boot-error';
  notice.setAttribute('role', 'alert');
  notice.textContent = `Hearth cannot start here: ${message}`;
  document.body.prepend(notice);
});
