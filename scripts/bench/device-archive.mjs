// The device pack's archive format (device-pack.mjs writes it, device-run.mjs unpacks it): a folder
// holding `manifest.json` and `blobs/<sha256>.br`, one Brotli stream per distinct file content.
//
// Why this and not tar.xz: the lent GPU machine has Node but nothing is known of its `tar` or `xz`,
// and Node's zlib has Brotli built in, so the unpacker needs nothing but Node. Why one blob per
// content: node-llama-cpp's CPU and Vulkan packages share fifteen identical libraries, stored once;
// and a rebuilt pack keeps the blobs whose content did not change (Brotli at quality 11 takes
// minutes for the 43 MB libggml-vulkan.so on two cores; xz -6 would be 12 % smaller).
//
// Plain JavaScript with no dependencies, so that the GPU machine runs it with Node alone.
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { brotliCompressSync, brotliDecompressSync, constants } from 'node:zlib';

const MANIFEST = 'manifest.json';
const BLOBS = 'blobs';
const FORMAT = 'hearth-device-pack/1';

/**
 * Writes `entries` ({path inside the pack, from: source file}) into `packDir`: the manifest, and a
 * blob per distinct content, reusing blobs already there and deleting the ones no longer named.
 * Returns what the pack holds: the files, their bytes unpacked, and the bytes on disk.
 */
export function writePack(packDir, entries, { quality = 11, log = () => {} } = {}) {
  mkdirSync(path.join(packDir, BLOBS), { recursive: true });
  const files = [];
  const blobs = new Set();
  for (const { path: name, from } of entries) {
    if (path.isAbsolute(name) || name.split('/').includes('..'))
      throw new Error(`device pack: ${name} is not a relative path inside the pack`);
    const data = readFileSync(from);
    const blob = createHash('sha256').update(data).digest('hex');
    const blobPath = path.join(packDir, BLOBS, `${blob}.br`);
    if (!blobs.has(blob) && !existsSync(blobPath)) {
      const t0 = performance.now();
      const params = {
        [constants.BROTLI_PARAM_QUALITY]: quality,
        [constants.BROTLI_PARAM_LGWIN]: 24,
        [constants.BROTLI_PARAM_SIZE_HINT]: data.length,
      };
      writeFileSync(blobPath, brotliCompressSync(data, { params }));
      log(`  ${name}: ${mib(data.length)} -> ${mib(statSync(blobPath).size)} in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    }
    blobs.add(blob);
    files.push({ path: name, size: data.length, mode: statSync(from).mode & 0o777, blob });
  }
  for (const f of readdirSync(path.join(packDir, BLOBS))) if (!blobs.has(f.replace(/\.br$/, ''))) rmSync(path.join(packDir, BLOBS, f));
  writeFileSync(path.join(packDir, MANIFEST), `${JSON.stringify({ format: FORMAT, files }, null, 1)}\n`);
  return { files, unpackedBytes: files.reduce((s, f) => s + f.size, 0), packBytes: folderBytes(packDir) };
}

/** Unpacks `packDir` into `destDir` (made if missing; files already there are overwritten). Returns the files written. */
export function unpack(packDir, destDir) {
  const manifestPath = path.join(packDir, MANIFEST);
  if (!existsSync(manifestPath))
    throw new Error(`device pack: no ${MANIFEST} in ${packDir} (run node scripts/bench/device-pack.mjs, and carry its folder)`);
  const manifest = JSON.parse(readFileSync(manifestPath, 'utf8'));
  if (manifest.format !== FORMAT) throw new Error(`device pack: ${manifestPath} is ${manifest.format}, not ${FORMAT}`);
  const root = path.resolve(destDir);
  for (const f of manifest.files) {
    const out = path.resolve(root, f.path);
    if (!out.startsWith(root + path.sep)) throw new Error(`device pack: ${f.path} leaves ${destDir}`);
    const data = brotliDecompressSync(readFileSync(path.join(packDir, BLOBS, `${f.blob}.br`)));
    if (data.length !== f.size || createHash('sha256').update(data).digest('hex') !== f.blob)
      throw new Error(`device pack: ${f.path} does not match its manifest entry (a damaged or partly copied pack)`);
    mkdirSync(path.dirname(out), { recursive: true });
    writeFileSync(out, data);
    chmodSync(out, f.mode);
  }
  return manifest.files.map((f) => f.path);
}

/** Bytes of every file below `dir`. */
export function folderBytes(dir) {
  let total = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    total += e.isDirectory() ? folderBytes(p) : statSync(p).size;
  }
  return total;
}

/**
 * Whether a pack of `packBytes` fits beside a working tree of `treeBytes` within the device tool's
 * `limitBytes` (64 MiB), keeping `marginBytes` free for the tree to grow. Returns the room left for
 * the pack and, when it does not fit, a message that says by how much.
 */
export function packBudget({ packBytes, treeBytes, limitBytes = 64 * 2 ** 20, marginBytes = 4 * 2 ** 20 }) {
  const room = limitBytes - treeBytes - marginBytes;
  const ok = packBytes <= room;
  const message = ok
    ? `pack ${mib(packBytes)} + working tree ${mib(treeBytes)} = ${mib(packBytes + treeBytes)} of the ${mib(limitBytes)} the device tool carries (${mib(room - packBytes)} to spare beyond a ${mib(marginBytes)} margin)`
    : `pack ${mib(packBytes)} is over its room of ${mib(room)} by ${mib(packBytes - room)}: the device tool carries ${mib(limitBytes)}, the working tree takes ${mib(treeBytes)}, and ${mib(marginBytes)} is kept as margin`;
  return { ok, room, message };
}

export const mib = (bytes) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;
