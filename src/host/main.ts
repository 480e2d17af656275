/**
 * The browser entry of the app (index.html): registers the Service Worker, joins the
 * engine-host election, installs `globalThis.hearth`, and mounts the UI shell.
 *
 * Not here: the engine (workers/engine.worker.ts), the views (src/ui).
 */
import { startEngineHosting } from './engine-host';
import { installPageHandle } from './page-handle';
import { registerServiceWorker } from './register-sw';
import '../ui/app-shell';

const hosting = startEngineHosting();
installPageHandle(hosting);
registerServiceWorker().catch((err: unknown) => {
  console.error('[hearth] Service Worker registration failed:', err);
  document.body.dataset.hearthError = err instanceof Error ? err.message : String(err);
});
