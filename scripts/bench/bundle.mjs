// Bundles the bench (scripts/bench/run.ts) into one ES module for a machine without npm, such as a
// lent GPU machine: `node scripts/bench/bundle.mjs [out]` (default .devbench/a/b/c/run.mjs). The
// output must sit four folders below the repository root, as run.ts does, because the bundled
// models are read from public/ relative to it. `.wgsl?raw` imports become text; `webgpu` stays
// external (carry its package with dist/<platform>/dawn.node beside the bundle's node_modules);
// vite and playwright-core, needed only by the Chromium sections, are stubs that throw.
// On the GPU machine: `VK_DRIVER_FILES=<the vendor ICD json> node <out> --full --sections ...`.
import { build } from 'esbuild';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));
const outfile = path.resolve(process.argv[2] ?? path.join(root, '.devbench/a/b/c/run.mjs'));
if (path.relative(root, outfile).split(path.sep).length !== 5) throw new Error(`bundle.mjs: ${outfile} is not four folders below ${root}`);
await build({
  entryPoints: [path.join(root, 'scripts/bench/run.ts')],
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  outfile,
  external: ['webgpu'],
  banner: { js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);" },
  plugins: [
    {
      name: 'raw-and-stubs',
      setup(b) {
        b.onResolve({ filter: /\?raw$/ }, (a) => {
          const spec = a.path.slice(0, -4);
          return {
            path: spec.startsWith('.') ? path.resolve(a.resolveDir, spec) : path.join(root, 'node_modules', spec),
            namespace: 'raw',
          };
        });
        b.onLoad({ filter: /.*/, namespace: 'raw' }, async (a) => ({ contents: await readFile(a.path, 'utf8'), loader: 'text' }));
        b.onResolve({ filter: /^(vite|playwright-core)$/ }, (a) => ({ path: a.path, namespace: 'stub' }));
        b.onLoad({ filter: /.*/, namespace: 'stub' }, () => ({
          contents:
            "module.exports = new Proxy({}, { get: () => () => { throw new Error('not in the bundled bench: run the Chromium sections from the repository'); } });",
          loader: 'js',
        }));
      },
    },
  ],
  logLevel: 'warning',
});
console.log(`bench bundled: ${outfile}`);
