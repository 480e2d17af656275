// Re-adds node-llama-cpp's platform packages that this project's registry does not serve (macOS,
// Windows, riscv64) to package-lock.json as optional entries for other platforms, so `npm ci`
// accepts the lock. npm skips them on Linux x64/arm64 (os/cpu do not match) and never fetches them.
//
// Why: `npm install` drops optional dependencies it cannot resolve from the lock, and `npm ci` then
// refuses the lock as out of sync with node-llama-cpp's optionalDependencies. Run this after any
// `npm install` that rewrites the lock: `node scripts/lock-llama-platforms.mjs`.
import { readFileSync, writeFileSync } from 'node:fs';

const lockPath = new URL('../package-lock.json', import.meta.url);
const lock = JSON.parse(readFileSync(lockPath, 'utf8'));
const main = lock.packages['node_modules/node-llama-cpp'];
if (!main) throw new Error('node-llama-cpp is not in package-lock.json');
const platform = (name) => {
  const [os, cpu] = name.replace('@node-llama-cpp/', '').split('-');
  return { os: [{ mac: 'darwin', win: 'win32', linux: 'linux' }[os]], cpu: [cpu] };
};
let added = 0;
for (const [name, version] of Object.entries(main.optionalDependencies ?? {})) {
  const key = `node_modules/${name}`;
  if (lock.packages[key]) continue;
  lock.packages[key] = { version, ...platform(name), dev: true, license: 'MIT', optional: true, engines: { node: '>=20.0.0' } };
  added++;
}
writeFileSync(lockPath, `${JSON.stringify(lock, null, 2)}\n`);
console.log(`lock-llama-platforms: ${added} entries added`);
