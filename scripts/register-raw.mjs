// `node --import ./scripts/register-raw.mjs`: installs raw-import-hooks.mjs (see there).
import { register } from 'node:module';
register('./raw-import-hooks.mjs', import.meta.url);
