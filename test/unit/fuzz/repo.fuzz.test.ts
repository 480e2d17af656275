// Mutation fuzzing of a whole safetensors repository as the loader reads it (issue 10's standard):
// the bundled tiny-qwen3 with its weights sharded in two, then model.safetensors.index.json and
// config.json mutated node by node, so the checks that join the files (weight_map against the
// shards, config shapes against the tensors, vocab_size against the tokenizer) see hostile input.
// Each mutant loads, or is refused with RepositoryError, ConfigError, SafetensorsError or
// TokenizerError, before any weight is handed out; no read falls outside a file.
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/engine/model/config/fields';
import { loadModelFiles, RepositoryError } from '../../../src/engine/model/files/repo';
import { SafetensorsError, SafetensorsFile } from '../../../src/engine/model/files/safetensors';
import { writeSafetensors } from '../../../src/engine/model/files/safetensors-writer';
import type { ModelSource } from '../../../src/engine/model/sources/source';
import type { TensorData } from '../../../src/engine/tensor/tensor-data';
import { TokenizerError } from '../../../src/engine/model/text/tokenizer-checks';
import { expectParsesOrRefuses, mutateJson, n, SEED } from './mutate';

const folder = new URL('../../../public/models/tiny-qwen3/', import.meta.url);
const original = new Map<string, Uint8Array>(readdirSync(folder).map((f) => [f, new Uint8Array(readFileSync(new URL(f, folder)))]));
const ALLOWED = [RepositoryError, ConfigError, SafetensorsError, TokenizerError];

/** A picked-files repository whose reads must stay inside each file. */
function repo(files: ReadonlyMap<string, Uint8Array>): ModelSource {
  return {
    id: 'fuzz',
    label: 'fuzz',
    list: async () => [...files.keys()],
    open: async (name) => {
      const bytes = files.get(name);
      if (!bytes) return null;
      const blob = new Blob([bytes as BlobPart]);
      return Object.assign(blob, {
        slice: (begin = 0, end = bytes.length) => {
          if (!(begin >= 0 && end >= begin && end <= bytes.length)) throw new Error(`${name}: read [${begin}, ${end}) outside the file`);
          return new Blob([bytes.subarray(begin, end) as BlobPart]);
        },
      });
    },
  };
}

async function load(files: ReadonlyMap<string, Uint8Array>): Promise<void> {
  const loaded = await loadModelFiles(repo(files));
  for await (const t of loaded.tensors()) expect(t.data.length).toBeGreaterThan(0);
}

/** tiny-qwen3 with its weights in two shards and an index. */
async function sharded(): Promise<Map<string, Uint8Array>> {
  const file = await SafetensorsFile.open(original.get('model.safetensors')!);
  const tensors: TensorData[] = [];
  for await (const t of file.tensors()) tensors.push(t);
  const names = ['model-00001-of-00002.safetensors', 'model-00002-of-00002.safetensors'];
  const half = Math.ceil(tensors.length / 2);
  const weight_map = Object.fromEntries(tensors.map((t, i) => [t.name, names[i < half ? 0 : 1]]));
  const files = new Map(original);
  files.delete('model.safetensors');
  files.set(names[0], writeSafetensors(tensors.slice(0, half)));
  files.set(names[1], writeSafetensors(tensors.slice(half)));
  files.set('model.safetensors.index.json', new TextEncoder().encode(JSON.stringify({ metadata: { total_size: 0 }, weight_map })));
  return files;
}

describe('repository fuzzing', () => {
  for (const file of ['model.safetensors.index.json', 'config.json']) {
    it(`refuses hostile ${file} mutants before any weight is handed out`, async () => {
      const files = await sharded();
      await load(files);
      const text = new TextDecoder().decode(files.get(file));
      const mutants = mutateJson(text, n(20), SEED + file.length).map((m) => ({
        what: m.what,
        value: new Map([...files, [file, new TextEncoder().encode(m.value)]]),
      }));
      // A shard name pointing outside the repository, or at the other file's tensors.
      if (file.endsWith('index.json')) {
        const index = JSON.parse(text) as { weight_map: Record<string, string> };
        const first = Object.keys(index.weight_map)[0];
        for (const shard of ['../model.safetensors', '/etc/passwd.safetensors', 'model-00002-of-00002.safetensors', 'config.json', '']) {
          const changed = { ...index, weight_map: { ...index.weight_map, [first]: shard } };
          mutants.push({
            what: `${first} in ${shard}`,
            value: new Map([...files, [file, new TextEncoder().encode(JSON.stringify(changed))]]),
          });
        }
      }
      const { refused } = await expectParsesOrRefuses(mutants, load, ALLOWED);
      expect(refused).toBeGreaterThan(mutants.length / 4);
    });
  }
});
