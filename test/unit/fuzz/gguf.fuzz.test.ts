// Mutation fuzzing of GGUF loading (issue 11's validation "as strict as the safetensors reader's",
// issue 10's standard): a tiny Qwen3 GGUF with its gpt2 vocabulary and a tiny SentencePiece one,
// mutated byte by byte, with every length/count/offset/type field of the header set to hostile
// values, cut at every structural boundary, and with metadata values replaced (wrong types, zero,
// 2^31, 2^63, NaN, Inf, huge strings). Each mutant goes through the whole loader (reader, config,
// tokenizer, template, tensor table): it loads, or is refused with RepositoryError (the loader's
// wrapper of GgufError) or TokenizerError; no read may fall outside the file.
import { describe, expect, it } from 'vitest';
import { loadGgufModelFiles } from '../../../src/engine/model/gguf/gguf-repo';
import { GGUF_SCALARS, GgufValueType, readGguf, readGgufTensor, type GgufMetadataEntry } from '../../../src/engine/model/gguf/gguf-reader';
import { ggufTokenizerFiles } from '../../../src/engine/model/gguf/gguf-tokenizer';
import { gv, writeGguf, type GgufInput, type GgufTensorInput } from '../../../src/engine/model/gguf/gguf-writer';
import { GgufError } from '../../../src/engine/model/gguf/gguf-reader';
import { RepositoryError } from '../../../src/engine/model/files/repo';
import { memoryBytes } from '../../../src/engine/model/files/safetensors';
import type { ModelSource } from '../../../src/engine/model/sources/source';
import { ModelTokenizer } from '../../../src/engine/model/text/tokenizer';
import { TokenizerError } from '../../../src/engine/model/text/tokenizer-checks';
import { Rng } from '../../../src/engine/tensor/random';
import { gemma3Gguf, randomGemma3Tensors, tinyGemma3Config } from '../model/gemma3-fixtures';
import { randomGguf } from '../model/gguf-fixtures';
import { expectParsesOrRefuses, mutateBytes, n, SEED, type Mutant } from './mutate';

const SEED_GGUF = randomGguf('Q8_0', 7, 'Q8_0', 'qwen3', 1).gguf;

/** A file whose reads must stay inside it (blobBytes reads through slice, which would otherwise clamp). */
class StrictBlob extends Blob {
  override slice(begin = 0, end = this.size, type?: string): Blob {
    if (!(begin >= 0 && end >= begin && end <= this.size)) throw new Error(`read [${begin}, ${end}) outside the ${this.size}-byte file`);
    return super.slice(begin, end, type);
  }
}

function oneFile(bytes: Uint8Array, name = 'model.gguf'): ModelSource {
  const file = new StrictBlob([bytes as BlobPart]);
  return { id: 'fuzz', label: 'fuzz', list: async () => [name], open: async (f) => (f === name ? file : null) };
}

async function loadAll(bytes: Uint8Array): Promise<void> {
  const loaded = await loadGgufModelFiles(oneFile(bytes), ['model.gguf']);
  loaded.tokenizer.encode('Hello there');
  for await (const t of loaded.tensors()) expect(t.data.length).toBeLessThanOrEqual(bytes.length);
}

/** Where a valid GGUF's u32/u64 fields are, and its structural boundaries (after each field and item). */
function ggufStructure(bytes: Uint8Array): { fields: Array<{ at: number; width: 4 | 8 }>; bounds: number[] } {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const fields: Array<{ at: number; width: 4 | 8 }> = [];
  const bounds: number[] = [];
  let pos = 0;
  const u32 = () => (fields.push({ at: pos, width: 4 }), (pos += 4), view.getUint32(pos - 4, true));
  const u64 = () => (fields.push({ at: pos, width: 8 }), (pos += 8), Number(view.getBigUint64(pos - 8, true)));
  const str = () => {
    const n = u64();
    pos += n;
    bounds.push(pos);
  };
  const value = (type: number) => {
    if (type === GgufValueType.STRING) return str();
    if (type === GgufValueType.ARRAY) {
      const item = u32();
      const count = u64();
      if (item !== GgufValueType.STRING) pos += count * GGUF_SCALARS[item]!.BYTES_PER_ELEMENT;
      // The first few strings' lengths are fields; the rest are skipped.
      for (let i = 0; item === GgufValueType.STRING && i < count; i++) {
        if (i < 4 || i === count - 1) str();
        else pos += 8 + Number(view.getBigUint64(pos, true));
      }
    } else {
      // Scalar values are fields too: counts, sizes, ids and the alignment.
      const width = GGUF_SCALARS[type]!.BYTES_PER_ELEMENT;
      if (width === 4 || width === 8) fields.push({ at: pos, width });
      pos += width;
    }
    bounds.push(pos);
  };
  pos = 8; // magic, version
  const tensors = u64();
  const pairs = u64();
  for (let i = 0; i < pairs; i++) {
    str();
    value(u32());
  }
  for (let i = 0; i < tensors; i++) {
    str();
    const dims = u32();
    for (let d = 0; d < dims; d++) u64();
    u32();
    u64();
    bounds.push(pos);
  }
  return { fields, bounds };
}

/** A GGUF as writer input, to change and write again. */
async function unwrite(
  bytes: Uint8Array,
): Promise<GgufInput & { metadata: Array<[string, GgufMetadataEntry]>; tensors: GgufTensorInput[] }> {
  const file = await readGguf(memoryBytes(bytes));
  const tensors: GgufTensorInput[] = [];
  for (const t of file.tensors)
    tensors.push({ name: t.name, ne: t.ne, type: t.type.name, data: await readGgufTensor(memoryBytes(bytes), t) });
  return { metadata: [...file.metadata], tensors };
}

/** Hostile metadata values: every type, out-of-range numbers, NaN and Inf, a huge string, empty arrays. */
const HOSTILE_VALUES: GgufMetadataEntry[] = [
  gv.u32(0),
  gv.u32(2 ** 31),
  gv.u32(2 ** 32 - 1),
  gv.i32(-1),
  { type: GgufValueType.UINT64, value: 1n << 63n },
  { type: GgufValueType.INT64, value: -(1n << 62n) },
  gv.f32(NaN),
  gv.f32(Infinity),
  gv.f32(-Infinity),
  gv.f32(0.5),
  { type: GgufValueType.FLOAT64, value: 1e300 },
  gv.bool(true),
  gv.str(''),
  gv.str('x'.repeat(1 << 16)),
  gv.strs([]),
  gv.strs(['a', 'b']),
  gv.i32s([]),
  gv.i32s([-1, 2 ** 31 - 1]),
  gv.f32s([NaN]),
];

/** Keys a loader reads when present ({a}: the architecture). */
const OPTIONAL_KEYS = [
  'general.alignment',
  '{a}.attention.sliding_window',
  '{a}.attention.key_length',
  '{a}.rope.dimension_count',
  '{a}.rope.scaling.type',
  '{a}.rope.scaling.factor',
  '{a}.rope.scaling.attn_factor',
  '{a}.rope.scaling.original_context_length',
  '{a}.vocab_size',
  'tokenizer.ggml.bos_token_id',
  'tokenizer.ggml.eot_token_id',
  'tokenizer.ggml.eom_token_id',
  'tokenizer.ggml.unknown_token_id',
  'tokenizer.ggml.add_space_prefix',
  'tokenizer.ggml.add_eos_token',
  'tokenizer.ggml.scores',
  'tokenizer.chat_template',
  'split.no',
  'split.count',
  'split.tensors.count',
];

/** Each mutant: one metadata value replaced by a hostile one (or deleted, or one array item changed). */
function metadataMutants(
  meta: Array<[string, GgufMetadataEntry]>,
  count: number,
  seed: number,
): Array<Mutant<Array<[string, GgufMetadataEntry]>>> {
  const rng = new Rng(seed);
  const out: Array<Mutant<Array<[string, GgufMetadataEntry]>>> = [];
  while (out.length < count) {
    const i = rng.int(meta.length);
    const [key, entry] = meta[i];
    const kind = rng.int(5);
    if (kind === 0) {
      out.push({ what: `${key} deleted`, value: meta.filter((_, j) => j !== i) });
    } else if (kind === 4) {
      // An optional key the seed lacks, added with a hostile value (a present one is replaced: keys are unique).
      const arch = meta.find(([k]) => k === 'general.architecture')?.[1].value as string;
      const extra = OPTIONAL_KEYS[rng.int(OPTIONAL_KEYS.length)].replace('{a}', arch);
      // The writer pads to the alignment it is given, so a huge one is left to the byte-level mutants.
      const v = extra === 'general.alignment' ? gv.u32([0, 3, 48, 4096][rng.int(4)]) : HOSTILE_VALUES[rng.int(HOSTILE_VALUES.length)];
      out.push({
        what: `${extra} added = ${String(v.value).slice(0, 20)} (type ${v.type})`,
        value: [...meta.filter(([k]) => k !== extra), [extra, v]],
      });
    } else if (
      (kind === 1 && entry.type === GgufValueType.ARRAY && ArrayBuffer.isView(entry.value)) ||
      (kind === 1 && Array.isArray(entry.value))
    ) {
      const arr = entry.value as ArrayLike<unknown>;
      const at = rng.int(Math.max(1, arr.length));
      const copy = Array.isArray(arr) ? [...arr] : (arr as Int32Array).slice();
      const hostile =
        typeof copy[at] === 'string'
          ? ['', 'x'.repeat(5000), '\u0000', ' ', 'a b c'][rng.int(5)]
          : [-1, 2 ** 31 - 1, 1e9, NaN, 0][rng.int(5)];
      (copy as unknown[])[at] = hostile;
      out.push({
        what: `${key}[${at}] = ${JSON.stringify(hostile)?.slice(0, 20)}`,
        value: meta.map((m, j) => (j === i ? [key, { ...entry, value: copy as never }] : m)),
      });
    } else {
      const v = HOSTILE_VALUES[rng.int(HOSTILE_VALUES.length)];
      out.push({ what: `${key} = ${String(v.value).slice(0, 20)} (type ${v.type})`, value: meta.map((m, j) => (j === i ? [key, v] : m)) });
    }
  }
  return out;
}

/**
 * Metadata mutants as files. The few the writer cannot express (NaN in a 64-bit integer array) are
 * left out: they are mutants of the test's input, not files a parser could be given.
 */
function written(mutants: Array<Mutant<Array<[string, GgufMetadataEntry]>>>, tensors: GgufTensorInput[]): Array<Mutant<Uint8Array>> {
  return mutants.flatMap((m) => {
    try {
      return [{ what: m.what, value: writeGguf({ metadata: m.value, tensors }) }];
    } catch {
      return [];
    }
  });
}

describe('GGUF fuzzing', () => {
  it('the seed file loads', async () => {
    await loadAll(SEED_GGUF);
  });

  it('refuses byte and field mutants of the header and tensor table', async () => {
    // The seed with an explicit general.alignment, so that field is mutated too.
    const input = await unwrite(SEED_GGUF);
    const bytes = writeGguf({ ...input, metadata: [['general.alignment', gv.u32(64)], ...input.metadata] });
    await loadAll(bytes);
    const structure = ggufStructure(bytes);
    const dataOffset = (await readGguf(memoryBytes(bytes))).dataOffset;
    const mutants = mutateBytes(bytes, n(250), SEED, { ...structure, span: dataOffset + 64 });
    const { refused } = await expectParsesOrRefuses(mutants, loadAll, [RepositoryError, TokenizerError]);
    expect(refused).toBeGreaterThan(mutants.length / 2);
  });

  // Qwen3 (the seed above), Llama (q/k rows permuted, Llama 3's rope_freqs tensor) and Gemma 3 (its own config keys).
  const gemmaConfig = tinyGemma3Config();
  const metadataSeeds: Record<string, () => Uint8Array> = {
    qwen3: () => SEED_GGUF,
    llama: () => randomGguf('Q4_K', 8, 'F16', 'llama', 1).gguf,
    gemma3: () => gemma3Gguf(gemmaConfig, randomGemma3Tensors(gemmaConfig, 'f32', 9)),
  };
  for (const [arch, seedFile] of Object.entries(metadataSeeds)) {
    it(`refuses hostile metadata values of a ${arch} file (config keys, special ids, tokens, merges, template)`, async () => {
      const bytes = seedFile();
      await loadAll(bytes);
      const input = await unwrite(bytes);
      const mutants = written(metadataMutants(input.metadata, n(arch === 'gemma3' ? 40 : 60), SEED + arch.length), input.tensors);
      const { parsed, refused } = await expectParsesOrRefuses(mutants, loadAll, [RepositoryError, TokenizerError]);
      expect(refused).toBeGreaterThan(0);
      expect(parsed).toBeGreaterThan(0);
    });
  }

  it('refuses split models with hostile split keys or part names', async () => {
    const input = await unwrite(SEED_GGUF);
    const half = Math.ceil(input.tensors.length / 2);
    const partName = (i: number, of = 2) => `m-${String(i).padStart(5, '0')}-of-${String(of).padStart(5, '0')}.gguf`;
    const splitKeys = (no: number): Array<[string, GgufMetadataEntry]> => [
      ['split.no', gv.u32(no)],
      ['split.count', gv.u32(2)],
      ['split.tensors.count', gv.i32(input.tensors.length)],
    ];
    const parts = [
      { metadata: [...input.metadata, ...splitKeys(0)], tensors: input.tensors.slice(0, half) },
      { metadata: splitKeys(1), tensors: input.tensors.slice(half) },
    ];
    const load = async (files: Array<{ name: string; bytes: Uint8Array }>) => {
      const source: ModelSource = {
        id: 'fuzz',
        label: 'fuzz',
        list: async () => files.map((f) => f.name),
        open: async (name) => {
          const f = files.find((x) => x.name === name);
          return f ? new StrictBlob([f.bytes as BlobPart]) : null;
        },
      };
      const loaded = await loadGgufModelFiles(
        source,
        files.map((f) => f.name),
      );
      for await (const t of loaded.tensors()) expect(t.data.length).toBeGreaterThan(0);
    };
    const whole = parts.map((p, i) => ({ name: partName(i + 1), bytes: writeGguf(p) }));
    await load(whole);
    const mutants: Array<Mutant<Array<{ name: string; bytes: Uint8Array }>>> = [];
    for (const [i, part] of parts.entries()) {
      for (const m of written(metadataMutants(part.metadata, n(40), SEED + 3 + i), part.tensors)) {
        mutants.push({ what: `part ${i + 1}: ${m.what}`, value: whole.map((w, j) => (j === i ? { ...w, bytes: m.value } : w)) });
      }
    }
    const names = [
      [partName(1)],
      [partName(2), partName(1)],
      [partName(1), partName(1)],
      [partName(1, 99999), partName(2, 99999)],
      [partName(0), partName(1)],
      [partName(1), 'm-00002-of-00003.gguf'],
      [partName(1), partName(2), partName(3, 2)],
      ['x.gguf', partName(2)],
    ];
    for (const list of names)
      mutants.push({ what: `named ${list.join(', ')}`, value: list.map((name, j) => ({ name, bytes: whole[j % 2].bytes })) });
    const { refused } = await expectParsesOrRefuses(mutants, load, [RepositoryError, TokenizerError]);
    expect(refused).toBeGreaterThan(names.length);
  });

  it('refuses hostile SentencePiece vocabulary metadata', async () => {
    // unk, bos, eos, the 256 byte pieces and a few words.
    const bytePieces = Array.from({ length: 256 }, (_, i) => `<0x${i.toString(16).toUpperCase().padStart(2, '0')}>`);
    const tokens = ['<unk>', '<s>', '</s>', ...bytePieces, ...'▁ ▁a ▁the he ▁t h e t a'.split(' ')];
    const meta: Array<[string, GgufMetadataEntry]> = [
      ['tokenizer.ggml.model', gv.str('llama')],
      ['tokenizer.ggml.tokens', gv.strs(tokens)],
      ['tokenizer.ggml.scores', gv.f32s(tokens.map((_, i) => -i))],
      ['tokenizer.ggml.token_type', gv.i32s(tokens.map((t, i) => (i === 0 ? 2 : i < 3 ? 3 : t.startsWith('<0x') ? 6 : 1)))],
      ['tokenizer.ggml.bos_token_id', gv.u32(1)],
      ['tokenizer.ggml.eos_token_id', gv.u32(2)],
      ['tokenizer.ggml.unknown_token_id', gv.u32(0)],
      ['tokenizer.ggml.add_bos_token', gv.bool(true)],
      ['tokenizer.chat_template', gv.str('{% for m in messages %}{{ m.content }}{% endfor %}')],
    ];
    const build = async (bytes: Uint8Array) => {
      const file = await readGguf(memoryBytes(bytes), 'vocab.gguf');
      const files = ggufTokenizerFiles(file, 'vocab.gguf');
      ModelTokenizer.fromJson(files.tokenizer, files.tokenizerConfig).encode('the hat ä');
    };
    await build(writeGguf({ metadata: meta, tensors: [] }));
    const mutants = written(metadataMutants(meta, n(120), SEED + 2), []);
    const { refused } = await expectParsesOrRefuses(mutants, build, [GgufError, TokenizerError]);
    expect(refused).toBeGreaterThan(0);
  });
});
