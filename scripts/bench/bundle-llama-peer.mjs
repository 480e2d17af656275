// Bundles the llama.cpp peer (llama-cpp-peer.mjs) with node-llama-cpp and its JavaScript
// dependencies into one ES module, for a machine without npm (device-pack.mjs):
// `node scripts/bench/bundle-llama-peer.mjs <out dir>` writes <out dir>/llama-cpp-peer.mjs and the
// few package files the bundled code reads at run time, at their node_modules paths below <out dir>.
//
// Why the rewrite of `import.meta.url`: node-llama-cpp and ipull find their own files from their
// module's location (config.js: `<dist>/../llama/binariesGithubRelease.json`, getModuleVersion.js:
// `<dist>/../../package.json`, ipull's const.js: its package.json at load time). In one bundle every
// module would share the bundle's location, so each module's `import.meta.url` becomes the URL its
// file had under node_modules, rebased onto <out dir>; the files they read are copied there.
// The prebuilt binaries (`@node-llama-cpp/linux-x64-vulkan`, `@node-llama-cpp/linux-x64`) stay
// external: node-llama-cpp imports them by name and loads `bins/<platform>/llama-addon.node` from
// them; device-pack.mjs carries their minimal files. `@reflink/*` (copy-on-write file copies for
// model downloads, a native addon) is never reached by the peer and stays external too.
import { build } from 'esbuild';
import { copyFileSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));

/** Package files the bundled code reads from disk (found by running the bundle without them). */
const READ_AT_RUN_TIME = [
  'node_modules/node-llama-cpp/package.json',
  'node_modules/node-llama-cpp/llama/binariesGithubRelease.json',
  'node_modules/node-llama-cpp/llama/llama.cpp.info.json',
  'node_modules/ipull/package.json',
];

const BINDING_TEST = 'node_modules/node-llama-cpp/dist/bindings/utils/testBindingBinary.js';

/** Bundles `entry` into `outDir`/`out`, each module keeping its own URL (see the header). */
async function bundle(entry, outDir, out) {
  const outfile = path.join(outDir, out);
  const rebase = path.relative(path.dirname(outfile), outDir).split(path.sep).join('/') || '.';
  await build({
    entryPoints: [entry],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    minify: true,
    outfile,
    external: ['@node-llama-cpp/*', '@reflink/*'],
    banner: {
      js: [
        "import { createRequire as __cr } from 'node:module';",
        'const require = __cr(import.meta.url);',
        // A module's own URL, rebased from the repository root onto the bundle's output folder.
        `const __moduleUrl = (p) => new URL(${JSON.stringify(`${rebase}/`)} + p, import.meta.url).href;`,
      ].join(' '),
    },
    plugins: [
      {
        name: 'module-urls',
        setup(b) {
          b.onLoad({ filter: /[\\/]node_modules[\\/].*\.m?js$/ }, (a) => {
            const source = readFileSync(a.path, 'utf8');
            if (!source.includes('import.meta.url')) return undefined;
            const relative = path.relative(root, a.path).split(path.sep).join('/');
            return { contents: source.replaceAll('import.meta.url', `__moduleUrl(${JSON.stringify(relative)})`), loader: 'js' };
          });
        },
      },
    ],
    logLevel: 'warning',
  });
}

/** Bundles the peer into `outDir`; returns the paths written, relative to `outDir`. */
export async function bundleLlamaPeer(outDir) {
  const entry = 'llama-cpp-peer.mjs';
  await bundle(path.join(root, 'scripts/bench/llama-cpp-peer.mjs'), outDir, entry);
  // node-llama-cpp tests a prebuilt binary in a child process that runs this module's own file
  // (`fork(__filename)` with TEST_BINDING_CP=true), so that file exists at its own path, bundled too.
  await bundle(path.join(root, BINDING_TEST), outDir, BINDING_TEST);
  for (const file of READ_AT_RUN_TIME) {
    mkdirSync(path.dirname(path.join(outDir, file)), { recursive: true });
    copyFileSync(path.join(root, file), path.join(outDir, file));
  }
  return [entry, BINDING_TEST, ...READ_AT_RUN_TIME];
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const outDir = path.resolve(process.argv[2] ?? path.join(root, '.devbench/llama-cpp'));
  const files = await bundleLlamaPeer(outDir);
  console.log(`llama.cpp peer bundled: ${files.map((f) => path.join(outDir, f)).join(', ')}`);
}
