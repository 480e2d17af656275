// Loading a GGUF model (one file, or the parts of a split one) into LoadedModelFiles: the config,
// tokenizer and stop ids from the metadata, the weights in the file's types under their HF names
// (llama's q/k rows un-permuted, Llama 3's rope_freqs as the config's scaling), and every way a
// file can be incomplete, inconsistent or hostile refused before a weight is handed out, with a
// message naming the file and the key or tensor.
import { describe, expect, it } from 'vitest';
import { loadGgufModelFiles } from '../../../src/engine/model/gguf/gguf-repo';
import { readGguf, readGgufTensor } from '../../../src/engine/model/gguf/gguf-reader';
import { gv, writeGguf, type GgufInput, type GgufTensorInput } from '../../../src/engine/model/gguf/gguf-writer';
import { RepositoryError } from '../../../src/engine/model/files/repo';
import { memoryBytes } from '../../../src/engine/model/files/safetensors';
import { FilesSource } from '../../../src/engine/model/sources/files-source';
import type { ModelSource } from '../../../src/engine/model/sources/source';
import { planParameters } from '../../../src/engine/model/weights/parameter-plan';
import { dequantize } from '../../../src/engine/model/quant/dequant';
import { randomGguf, type GgufFixture } from './gguf-fixtures';

/** A GGUF file as writer input (metadata and tensor blocks), to change and write again. */
type Editable = { metadata: Array<GgufInput['metadata'][number]>; tensors: GgufTensorInput[] };
async function unwrite(bytes: Uint8Array): Promise<Editable> {
  const file = await readGguf(memoryBytes(bytes));
  const tensors: GgufTensorInput[] = [];
  for (const t of file.tensors)
    tensors.push({ name: t.name, ne: t.ne, type: t.type.name, data: await readGgufTensor(memoryBytes(bytes), t) });
  return { metadata: [...file.metadata], tensors };
}

/** llama.cpp's gguf-split: the first part has all metadata, each part some tensors and the split keys. */
function split(input: GgufInput, parts: number): File[] {
  const per = Math.ceil(input.tensors.length / parts);
  return Array.from({ length: parts }, (_, i) => {
    const keys: GgufInput['metadata'] = [
      ['split.no', { type: 2, value: i }],
      ['split.count', { type: 2, value: parts }],
      ['split.tensors.count', gv.i32(input.tensors.length)],
    ];
    const bytes = writeGguf({
      metadata: [...(i === 0 ? input.metadata : []), ...keys],
      tensors: input.tensors.slice(i * per, (i + 1) * per),
    });
    return new File([bytes as BlobPart], `model-${String(i + 1).padStart(5, '0')}-of-${String(parts).padStart(5, '0')}.gguf`);
  });
}

function recording(source: ModelSource): { source: ModelSource; opened: string[] } {
  const opened: string[] = [];
  return {
    opened,
    source: { id: source.id, label: source.label, list: () => source.list(), open: (f, r) => (opened.push(f), source.open(f, r)) },
  };
}

const one = (bytes: Uint8Array, name = 'model.gguf') => new FilesSource([new File([bytes as BlobPart], name)]);

/** Loads every weight and checks it against the fixture's HF-layout f32 tensors. */
async function expectFixtureWeights(source: ModelSource, files: string[], fx: GgufFixture, weightType: string) {
  const loaded = await loadGgufModelFiles(source, files);
  expect(loaded.config).toEqual({ ...fx.config, rmsNormEps: Math.fround(fx.config.rmsNormEps), bosTokenId: null });
  expect(loaded.weights.map((w) => w.name).sort()).toEqual(
    planParameters(fx.config)
      .map((p) => p.name)
      .sort(),
  );
  let bytes = 0;
  for await (const t of loaded.tensors()) {
    const entry = loaded.weights.find((w) => w.name === t.name)!;
    expect([t.dtype, t.shape]).toEqual([entry.dtype, entry.shape]);
    expect(t.dtype).toBe(t.shape.length === 1 ? 'f32' : t.name === 'model.embed_tokens.weight' ? 'f32' : weightType.toLowerCase());
    const want = fx.tensors.find((x) => x.name === t.name)!;
    expect(t.shape).toEqual(want.shape);
    const values = dequantize(
      t.dtype.toUpperCase(),
      t.data,
      want.shape.reduce((a, b) => a * b, 1),
    );
    expect(Buffer.from(values.buffer).equals(Buffer.from(want.data)), t.name).toBe(true);
    bytes += t.data.length;
  }
  expect(bytes).toBe(loaded.weightBytes);
  return loaded;
}

describe('loadGgufModelFiles', () => {
  it('loads a Qwen3 Q8_0 file: config, tokenizer and stop ids from the metadata, blocks as stored', async () => {
    const fx = randomGguf('Q8_0', 11);
    const loaded = await expectFixtureWeights(one(fx.gguf), ['model.gguf'], fx, 'Q8_0');
    expect(loaded.eosTokenIds).toEqual([263]);
    expect(loaded.tokenizer.encode('ab the')).toEqual([256, 257, 258]);
    expect(loaded.tokenizer.decode([256, 257, 258])).toBe('ab the');
    expect(loaded.weights.every((w) => w.file === 'model.gguf')).toBe(true);
  });

  it("loads a Llama F16 file: q/k rows back in HF order, the untied lm_head, Llama 3's rope_freqs", async () => {
    const fx = randomGguf('F16', 12, 'F32', 'llama');
    const loaded = await expectFixtureWeights(one(fx.gguf), ['model.gguf'], fx, 'F16');
    expect(loaded.config.ropeScaling).toEqual(fx.config.ropeScaling);
  });

  it('loads a model split in three parts as the same model, and the parts may come in any order', async () => {
    const fx = randomGguf('Q4_K', 13, 'F32', 'llama');
    const parts = split(await unwrite(fx.gguf), 3);
    const loaded = await expectFixtureWeights(new FilesSource(parts), parts.map((p) => p.name).reverse(), fx, 'Q4_K');
    expect(new Set(loaded.weights.map((w) => w.file)).size).toBe(3);
  });

  it('refuses a split model with a part missing, naming it, before opening any file', async () => {
    const parts = split(await unwrite(randomGguf('F32', 14).gguf), 3);
    const { source, opened } = recording(new FilesSource(parts));
    await expect(loadGgufModelFiles(source, [parts[0].name, parts[2].name])).rejects.toThrow('missing: model-00002-of-00003.gguf');
    await expect(loadGgufModelFiles(source, [parts[0].name])).rejects.toThrow(
      /split in 3 parts; missing: model-00002-of-00003.gguf, model-00003/,
    );
    expect(opened).toEqual([]);
  });

  it('refuses parts whose split keys disagree with their names', async () => {
    const input = await unwrite(randomGguf('F32', 15).gguf);
    const [a, b] = split(input, 2);
    const third = split(input, 3)[2];
    await expect(loadGgufModelFiles(new FilesSource([a, new File([third], b.name)]), [a.name, b.name])).rejects.toThrow(
      'model-00002-of-00002.gguf: metadata key split.count is 3, but 2 part(s) were given',
    );
    await expect(loadGgufModelFiles(new FilesSource([a, new File([a], b.name)]), [a.name, b.name])).rejects.toThrow(
      'model-00002-of-00002.gguf: metadata key split.no is 0, expected 1 for part 2',
    );
    const whole = new File([randomGguf('F32', 15).gguf as BlobPart], 'model-00002-of-00002.gguf');
    await expect(loadGgufModelFiles(new FilesSource([a, whole]), [a.name, whole.name])).rejects.toThrow(
      'model-00002-of-00002.gguf: metadata key split.count is missing (given as part 2 of 2)',
    );
  });

  const rewrite = async (change: (input: Editable) => void) => {
    const input = await unwrite(randomGguf('Q8_0', 16).gguf);
    change(input);
    return writeGguf(input);
  };
  const setKey = (key: string, entry: GgufInput['metadata'][number][1] | null) => (input: Editable) => {
    input.metadata = input.metadata.filter(([k]) => k !== key);
    if (entry) input.metadata.push([key, entry]);
  };

  it.each([
    ['an unknown architecture', setKey('general.architecture', gv.str('gptneox')), 'architecture gptneox is not supported'],
    ['a missing key', setKey('qwen3.embedding_length', null), 'metadata key qwen3.embedding_length is missing'],
    ['a layer count beyond the tensors', setKey('qwen3.block_count', gv.u32(2 ** 31)), 'qwen3.block_count (2147483648) does not fit'],
    [
      'a head count that does not divide',
      setKey('qwen3.attention.head_count_kv', gv.u32(3)),
      'head_count (4) must be a multiple of qwen3.attention.head_count_kv (3)',
    ],
    ['a fractional size', setKey('qwen3.feed_forward_length', gv.f32(511.5)), 'intermediateSize (511.5) is not a whole number'],
    ['an unknown pre-tokenizer', setKey('tokenizer.ggml.pre', gv.str('nope')), 'tokenizer.ggml.pre names the pre-tokenizer "nope"'],
    [
      'a tensor of no known name',
      (i: Editable) => i.tensors.push({ name: 'blk.0.ffn_gate_exps.weight', ne: [32], type: 'F32', data: new Uint8Array(128) }),
      'tensor blk.0.ffn_gate_exps.weight is not part of a qwen3 model',
    ],
    [
      'a tensor of the wrong shape',
      (i: Editable) => {
        const t = i.tensors.find((x) => x.name === 'blk.1.ffn_norm.weight')!;
        Object.assign(t, { ne: [128], data: t.data.subarray(0, 512) });
      },
      'tensor model.layers.1.post_attention_layernorm.weight: shape [128] expected [256]',
    ],
    [
      'a missing tensor',
      (i: Editable) => (i.tensors = i.tensors.filter((t) => t.name !== 'blk.1.attn_k.weight')),
      'missing tensor model.layers.1.self_attn.k_proj.weight',
    ],
    [
      'a norm in blocks',
      (i: Editable) =>
        Object.assign(
          i.tensors.find((x) => x.name === 'output_norm.weight')!,
          { type: 'Q8_0', data: new Uint8Array(272) },
        ),
      'tensor output_norm.weight is a vector in Q8_0 blocks',
    ],
    [
      'a tensor type Hearth does not read',
      (i: Editable) =>
        Object.assign(
          i.tensors.find((x) => x.name === 'blk.0.ffn_up.weight')!,
          { type: 'IQ4_NL', data: new Uint8Array(512 * 8 * 18) },
        ),
      'tensor blk.0.ffn_up.weight has type IQ4_NL, which Hearth does not read',
    ],
  ] as const)('refuses %s, naming it', async (_what, change, message) => {
    const err = await loadGgufModelFiles(one(await rewrite(change)), ['model.gguf']).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RepositoryError);
    expect((err as Error).message).toContain(message);
  });

  it('refuses a file that is not GGUF, and a file missing from the source', async () => {
    await expect(loadGgufModelFiles(one(new TextEncoder().encode('{"not": "gguf"}')), ['model.gguf'])).rejects.toThrow('not a GGUF file');
    await expect(loadGgufModelFiles(one(randomGguf('F32', 17).gguf), ['other.gguf'])).rejects.toThrow('other.gguf is missing');
    await expect(loadGgufModelFiles(one(randomGguf('F32', 17).gguf), ['model.safetensors'])).rejects.toThrow('is not a .gguf file');
  });
});
