// scripts/bench/device-archive.mjs, the format of the pack a lent GPU machine unpacks with Node
// alone: files come back byte for byte with their modes, identical contents are stored once, a
// rebuilt pack drops blobs no longer named, a damaged pack or a path leaving the destination is
// refused, and the size check says whether the pack fits beside the working tree.
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { packBudget, unpack, writePack } from '../../../scripts/bench/device-archive.mjs';

const MiB = 2 ** 20;
const dirs: string[] = [];
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'hearth-pack-'));
  dirs.push(d);
  return d;
}
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** Source files: a random binary, a copy of it under another name, an executable script, a text. */
function sources(dir: string) {
  const bytes = new Uint8Array(300_000).map(() => Math.floor(Math.random() * 256));
  writeFileSync(join(dir, 'lib.so'), bytes);
  writeFileSync(join(dir, 'copy.so'), bytes);
  writeFileSync(join(dir, 'run.sh'), '#!/bin/sh\necho hi\n');
  chmodSync(join(dir, 'run.sh'), 0o755);
  writeFileSync(join(dir, 'meta.json'), JSON.stringify({ release: 'v0.5.0' }));
  return [
    { path: 'pkg-a/bins/lib.so', from: join(dir, 'lib.so') },
    { path: 'pkg-b/bins/lib.so', from: join(dir, 'copy.so') },
    { path: 'run.sh', from: join(dir, 'run.sh') },
    { path: 'pkg-a/meta.json', from: join(dir, 'meta.json') },
  ];
}

describe('device pack archive', () => {
  it('unpacks every file byte for byte with its mode, storing identical contents once', () => {
    const src = tempDir();
    const entries = sources(src);
    const pack = join(tempDir(), 'pack');
    const written = writePack(pack, entries, { quality: 4 });
    expect(readdirSync(join(pack, 'blobs'))).toHaveLength(3);
    expect(written.unpackedBytes).toBe(2 * 300_000 + statSync(join(src, 'run.sh')).size + statSync(join(src, 'meta.json')).size);

    const dest = tempDir();
    expect(unpack(pack, dest).sort()).toEqual(entries.map((e) => e.path).sort());
    for (const e of entries) expect(readFileSync(join(dest, e.path)).equals(readFileSync(e.from))).toBe(true);
    expect(statSync(join(dest, 'run.sh')).mode & 0o777).toBe(0o755);
  });

  it('rebuilds in place: blobs of files no longer packed are removed, unchanged ones are not recompressed', () => {
    const src = tempDir();
    const entries = sources(src);
    const pack = join(tempDir(), 'pack');
    writePack(pack, entries, { quality: 4 });
    const compressed: string[] = [];
    writePack(pack, entries.slice(2), { quality: 4, log: (line) => compressed.push(line) });
    expect(compressed).toEqual([]);
    expect(readdirSync(join(pack, 'blobs'))).toHaveLength(2);
    const dest = tempDir();
    expect(unpack(pack, dest).sort()).toEqual(['pkg-a/meta.json', 'run.sh']);
  });

  it('refuses a damaged pack and paths that leave it', () => {
    const src = tempDir();
    const entries = sources(src);
    const pack = join(tempDir(), 'pack');
    writePack(pack, entries, { quality: 4 });
    const manifest = JSON.parse(readFileSync(join(pack, 'manifest.json'), 'utf8'));
    manifest.files[0].size += 1;
    writeFileSync(join(pack, 'manifest.json'), JSON.stringify(manifest));
    expect(() => unpack(pack, tempDir())).toThrow(/pkg-a\/bins\/lib.so does not match its manifest entry/);

    expect(() => writePack(pack, [{ path: '../outside', from: entries[0].from }])).toThrow(/not a relative path inside the pack/);
    manifest.files[0] = { ...manifest.files[0], size: manifest.files[0].size - 1, path: '../outside.so' };
    writeFileSync(join(pack, 'manifest.json'), JSON.stringify(manifest));
    expect(() => unpack(pack, tempDir())).toThrow(/..\/outside.so leaves/);
  });

  it('names the missing pack and what makes it', () => {
    const empty = tempDir();
    mkdirSync(join(empty, 'pack'));
    expect(() => unpack(join(empty, 'pack'), tempDir())).toThrow(/no manifest.json in .* \(run node scripts\/bench\/device-pack.mjs/);
  });

  it('fits a pack beside the working tree within the device tool limit, keeping a margin', () => {
    expect(packBudget({ packBytes: 25 * MiB, treeBytes: 30 * MiB })).toMatchObject({ ok: true, room: 30 * MiB });
    const over = packBudget({ packBytes: 31 * MiB, treeBytes: 30 * MiB });
    expect(over.ok).toBe(false);
    expect(over.message).toBe(
      'pack 31.0 MiB is over its room of 30.0 MiB by 1.0 MiB: the device tool carries 64.0 MiB, the working tree takes 30.0 MiB, and 4.0 MiB is kept as margin',
    );
  });
});
