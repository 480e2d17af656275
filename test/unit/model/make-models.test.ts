// `npm run make-models` is deterministic and what is committed under public/models/ is its output;
// the catalogue (index.json) describes the files truthfully.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { defaultCatalogEntry, parseCatalog } from '../../../src/engine/model/sources/catalog';
import { SafetensorsFile } from '../../../src/engine/model/files/safetensors';
import { makeModels } from '../../../scripts/model-making/build';
import { TRAINED_WEIGHT_FILES } from '../../../scripts/model-making/models';

const publicModels = new URL('../../../public/models/', import.meta.url);
const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

describe('make-models', () => {
  const first = makeModels();

  // Building trains a tokenizer and writes ~11 MB: a few seconds alone, more beside other test
  // files on two cores. The limit only keeps a hang from stalling the suite.
  it('gives byte-identical files when run twice', { timeout: 60_000 }, () => {
    const second = makeModels();
    expect([...second.keys()]).toEqual([...first.keys()]);
    for (const [path, bytes] of first) expect(sha(second.get(path)!), path).toBe(sha(bytes));
  });

  it('matches the committed files', async () => {
    for (const [path, bytes] of first) {
      const committed = new Uint8Array(readFileSync(new URL(path, publicModels)));
      if (TRAINED_WEIGHT_FILES.has(path)) {
        // The demo training replaces tiny-chat's and tiny-json's random weights with trained ones in the same layout:
        // compare the tensor table (names, dtypes, shapes), not the values.
        const [a, b] = await Promise.all([SafetensorsFile.open(committed), SafetensorsFile.open(bytes)]);
        expect([...a.entries.values()].map(({ name, dtype, shape }) => ({ name, dtype, shape }))).toEqual(
          [...b.entries.values()].map(({ name, dtype, shape }) => ({ name, dtype, shape })),
        );
        continue;
      }
      expect(sha(committed), `public/models/${path} is stale: run npm run make-models`).toBe(sha(bytes));
    }
  });

  it('keeps each committed trained model under 10 MB', () => {
    expect([...TRAINED_WEIGHT_FILES]).toEqual(['tiny-chat/model.safetensors', 'tiny-json/model.safetensors']);
    for (const path of TRAINED_WEIGHT_FILES) expect(statSync(new URL(path, publicModels)).size, path).toBeLessThan(10_000_000);
  });
});

describe('catalogue (index.json)', () => {
  const entries = parseCatalog(JSON.parse(readFileSync(new URL('index.json', publicModels), 'utf8')));

  it('lists the four models with tiny-chat as the default', () => {
    expect(entries.map((e) => e.id)).toEqual(['hearth/tiny-chat', 'hearth/tiny-json', 'hearth/tiny-qwen2', 'hearth/tiny-qwen3']);
    expect(defaultCatalogEntry(entries)!.id).toBe('hearth/tiny-chat');
    expect(entries.map((e) => e.architecture)).toEqual(['llama', 'llama', 'qwen2', 'qwen3']);
  });

  it('file lists and byte counts are those on disk', () => {
    for (const e of entries) {
      const dir = new URL(e.path.replace(/^models\//, ''), publicModels);
      let bytes = 0;
      for (const f of e.files!) {
        expect(existsSync(new URL(f, dir)), `${e.id}: ${f}`).toBe(true);
        bytes += statSync(new URL(f, dir)).size;
      }
      expect(bytes).toBe(e.bytes);
    }
  });

  it('rejects a malformed manifest naming the field', () => {
    expect(() => parseCatalog({ models: [{ id: 'x', path: 'models/x/', architecture: 'gpt2', parameters: 1, bytes: 1 }] })).toThrow(
      /models\.0\.architecture/,
    );
    const one = { id: 'x', path: 'p/', architecture: 'llama', parameters: 1, bytes: 1 };
    expect(() => parseCatalog({ models: [one, one] })).toThrow(/"x" appears twice/);
    expect(() => parseCatalog({})).toThrow(/models/);
  });
});
