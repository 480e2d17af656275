// Makes the device pack: everything a lent GPU machine needs to run issue 22's measurements
// (device-run.mjs) besides the repository itself, as one ignored folder to name in the device
// tool's `carry`:
//
//   node scripts/bench/device-pack.mjs            writes .devbench/pack/ (about 21 MiB) and .devbench/boot/
//
// The GPU machine has no npm, no network and no node_modules (the H200 lent on 2026-11-28 had no Node
// and no Vulkan loader either), and the device tool carries at most 64 MiB with the working tree. So
// .devbench/boot/ holds this machine's Node, stripped and xz-compressed (about 21 MiB), and Debian's
// Vulkan loader and GL dispatch packages, for a first call (device-setup.sh) that installs them; the
// second call carries the pack, which holds, Brotli-compressed
// (device-archive.mjs):
//   - the bench bundled into one module (bundle.mjs), at a/b/run.mjs;
//   - the `webgpu` package's package.json, index.js and dist/linux-x64/dawn.node (not its other
//     platforms: 132 MB installed);
//   - the llama.cpp peer bundled with node-llama-cpp's JavaScript (bundle-llama-peer.mjs), and the
//     prebuilt `@node-llama-cpp/linux-x64-vulkan` and `@node-llama-cpp/linux-x64` packages'
//     package.json, dist/index.js and bins (libggml-base, every libggml-cpu-* variant, which
//     ggml picks among by the CPU's features at run time, libggml-vulkan, libllama*, llama-addon.node
//     and the build metadata node-llama-cpp checks). The CPU package runs the peer where llama.cpp's
//     Vulkan backend refuses the device (SwiftShader);
//   - a Vulkan loader (Debian's chromium ships one, glibc 2.34), for a machine without libvulkan.so.1.
// It prints the pack's size beside the working tree's and fails when the two exceed what the device
// tool carries. Blobs whose content did not change are kept, so a rebuild after a code change only
// recompresses the bundles.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleLlamaPeer } from './bundle-llama-peer.mjs';
import { folderBytes, mib, packBudget, writePack } from './device-archive.mjs';

const root = fileURLToPath(new URL('../../', import.meta.url));
const devbench = path.join(root, '.devbench');
const stage = path.join(devbench, 'stage');
const packDir = path.join(devbench, 'pack');
const CHROMIUM_VULKAN_LOADER = '/usr/lib/chromium/libvulkan.so.1';

/** Every file below `dir`, as pack entries under `prefix`. */
function tree(dir, prefix) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const from = path.join(dir, e.name);
    const name = `${prefix}/${e.name}`;
    return e.isDirectory() ? tree(from, name) : [{ path: name, from }];
  });
}

/** A prebuilt node-llama-cpp package: what `getBinsDir()` and the binary loader read, nothing else. */
function llamaBinaries(pkg) {
  const from = path.join(root, 'node_modules/@node-llama-cpp', pkg);
  if (!existsSync(from)) throw new Error(`device pack: node_modules/@node-llama-cpp/${pkg} is missing (npm ci installs it)`);
  const to = `llama-cpp/node_modules/@node-llama-cpp/${pkg}`;
  return [
    { path: `${to}/package.json`, from: path.join(from, 'package.json') },
    { path: `${to}/dist/index.js`, from: path.join(from, 'dist/index.js') },
    ...tree(path.join(from, 'bins'), `${to}/bins`),
  ];
}

/** Bytes of what the device tool sends besides carried paths: tracked and untracked-not-ignored files, and shared/. */
function workingTreeBytes() {
  const git = (...args) =>
    execFileSync('git', args, { cwd: root, maxBuffer: 1 << 26 })
      .toString()
      .split('\0')
      .filter(Boolean);
  let bytes = 0;
  for (const f of git('ls-files', '-z', '--cached', '--others', '--exclude-standard')) {
    const p = path.join(root, f);
    if (existsSync(p) && statSync(p).isFile()) bytes += statSync(p).size;
  }
  // shared/ travels whether git tracks it or not.
  const shared = path.join(root, 'shared');
  return (
    bytes +
    (existsSync(shared) && git('ls-files', '-z', '--cached', '--others', '--exclude-standard', 'shared').length === 0
      ? folderBytes(shared)
      : 0)
  );
}

/**
 * The boot folder for device-setup.sh: Node (kept while this Node's version is unchanged: xz -9e takes
 * a minute) and the Vulkan loader and libglvnd packages, fetched with apt-get from Debian's mirror.
 */
function writeBoot() {
  const boot = path.join(devbench, 'boot');
  mkdirSync(boot, { recursive: true });
  const stamp = path.join(boot, 'node.version');
  const node = path.join(boot, 'node.xz');
  if (!existsSync(node) || !existsSync(stamp) || readFileSync(stamp, 'utf8') !== process.version) {
    const bare = path.join(boot, 'node');
    execFileSync('cp', [process.execPath, bare]);
    execFileSync('strip', [bare]); // 99 MB with debug info, 86 MB without
    execFileSync('xz', ['-9e', '-T0', '-f', bare]); // -> node.xz
    writeFileSync(stamp, process.version);
  }
  if (!readdirSync(boot).some((f) => f.endsWith('.deb'))) {
    const lists = path.join(devbench, 'apt-lists');
    mkdirSync(path.join(lists, 'partial'), { recursive: true });
    const o = ['-oAPT::Architecture=amd64', '-oAPT::Architectures=amd64', `-oDir::State::Lists=${lists}`];
    const update = spawnSync('apt-get', [...o, 'update'], { stdio: 'ignore' });
    const pkgs = ['libvulkan1', 'libglvnd0', 'libegl1', 'libgl1', 'libglx0', 'libgles2', 'libopengl0'];
    const got = update.status === 0 && spawnSync('apt-get', [...o, 'download', ...pkgs], { cwd: boot, stdio: 'ignore' }).status === 0;
    if (!got) console.log('device pack: apt-get could not fetch the Vulkan loader packages; device-setup.sh then relies on the machine’s');
  }
  const bytes = folderBytes(boot) - (existsSync(stamp) ? statSync(stamp).size : 0);
  console.log(`device pack: .devbench/boot/ ${mib(bytes)} (Node ${process.version}, Vulkan loader packages) for device-setup.sh`);
  return bytes;
}

const t0 = performance.now();
rmSync(stage, { recursive: true, force: true });
execFileSync(process.execPath, [path.join(root, 'scripts/bench/bundle.mjs'), path.join(stage, 'a/b/run.mjs')], { stdio: 'inherit' });
const peerFiles = await bundleLlamaPeer(path.join(stage, 'llama-cpp'));
const webgpu = path.join(root, 'node_modules/webgpu');
const entries = [
  { path: 'a/b/run.mjs', from: path.join(stage, 'a/b/run.mjs') },
  ...['package.json', 'index.js', 'dist/linux-x64/dawn.node'].map((f) => ({
    path: `node_modules/webgpu/${f}`,
    from: path.join(webgpu, f),
  })),
  ...peerFiles.map((f) => ({ path: `llama-cpp/${f}`, from: path.join(stage, 'llama-cpp', f) })),
  ...llamaBinaries('linux-x64-vulkan'),
  ...llamaBinaries('linux-x64'),
  ...(existsSync(CHROMIUM_VULKAN_LOADER) ? [{ path: 'lib/libvulkan.so.1', from: CHROMIUM_VULKAN_LOADER }] : []),
];
console.log(`device pack: ${entries.length} files into ${path.relative(root, packDir)}/ (Brotli; unchanged blobs are kept)`);
const pack = writePack(packDir, entries, { log: (line) => console.log(line) });
rmSync(stage, { recursive: true, force: true });
const budget = packBudget({ packBytes: pack.packBytes, treeBytes: workingTreeBytes() });
console.log(
  `device pack: ${pack.files.length} files, ${mib(pack.unpackedBytes)} unpacked, ${mib(pack.packBytes)} packed, in ${((performance.now() - t0) / 1000).toFixed(0)} s`,
);
console.log(`device pack: ${budget.message}`);
const bootBudget = packBudget({ packBytes: writeBoot(), treeBytes: workingTreeBytes() });
console.log(`device pack (boot call): ${bootBudget.message}`);
if (!budget.ok || !bootBudget.ok) process.exit(1);
console.log('device pack: on the GPU machine, two device.run calls, the second within 30 s of the first (docs/performance.md):');
console.log("  1. command `sh scripts/bench/device-setup.sh`, carry ['.devbench/boot'], timeout_s 120");
console.log("  2. command `PATH=/opt/hearth-node:$PATH node scripts/bench/device-run.mjs`, carry ['.devbench/pack'], timeout_s 600");
