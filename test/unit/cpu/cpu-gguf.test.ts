// The CPU backend's GGUF against llama.cpp (node-llama-cpp's prebuilt CPU build, the same engine
// wllama compiles to WebAssembly): a random-weight safetensors model of each family the CPU backend
// converts (llama with Llama 3 RoPE scaling, qwen2 with q/k/v biases, qwen3 with q/k norms) is
// written by `cpuGgufFromSafetensors`, and llama.cpp's logits of a prompt must match Hearth's
// reference forward of the HF tensors at every position. And the placeholder vocabulary: llama.cpp
// tokenizes the placeholder text of any ids back to exactly those ids (that is how the prompt
// reaches it), and a GGUF's metadata rewrite keeps its tensors and their bytes.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getLlama, type Llama } from 'node-llama-cpp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bf16AsF16, cpuGgufFromGguf, cpuGgufFromSafetensors, placeholderIds, placeholderText } from '../../../src/engine/cpu/cpu-gguf';
import { bf16BitsToF32, f16BitsToF32 } from '../../../src/engine/tensor/dtype';
import type { ModelConfig } from '../../../src/engine/model/config/model-config';
import { readGguf, readGgufTensor } from '../../../src/engine/model/gguf/gguf-reader';
import type { LoadedModelFiles } from '../../../src/engine/model/files/repo';
import { memoryBytes } from '../../../src/engine/model/files/safetensors';
import { ReferenceModel } from '../../../src/engine/reference/model';
import { randomModelTensors, testConfig } from '../../../src/engine/reference/random-model';
import { compareLogits, llamaCppLogits } from '../model/llama-cpp-oracle';

const PROMPT = [72, 101, 108, 108, 111, 5, 44, 7, 32, 119, 111, 114, 108, 100, 0, 210];

function filesOf(config: ModelConfig, seed: number): LoadedModelFiles {
  const tensors = randomModelTensors(config, 'f32', seed);
  return {
    config,
    async *tensors() {
      yield* tensors;
    },
  } as unknown as LoadedModelFiles;
}

const bytes = async (b: Blob) => new Uint8Array(await b.arrayBuffer());

let llama: Llama;
let dir = '';
beforeAll(async () => {
  llama = await getLlama({ gpu: false, build: 'never', logLevel: 'error' as never });
  dir = mkdtempSync(join(tmpdir(), 'hearth-cpu-gguf-'));
}, 60_000);
afterAll(async () => {
  await llama?.dispose();
  if (dir) rmSync(dir, { recursive: true, force: true });
}, 60_000);

describe('cpuGgufFromSafetensors', () => {
  const llama3 = { type: 'llama3', factor: 8, lowFreqFactor: 1, highFreqFactor: 4, originalMaxPositionEmbeddings: 16 } as const;
  it.each([
    ['llama, Llama 3 RoPE scaling', testConfig('llama', { ropeScaling: llama3 })],
    ['qwen2', testConfig('qwen2')],
    ['qwen3', testConfig('qwen3')],
  ] as const)(
    '%s: llama.cpp computes the logits of Hearth reference forward',
    async (label, cfg) => {
      const files = filesOf(cfg, 31);
      const gguf = await bytes(await cpuGgufFromSafetensors(files, { eos: 0, bos: null }));
      const path = join(dir, `${cfg.arch}.gguf`);
      writeFileSync(path, gguf);
      const theirs = await llamaCppLogits(llama, path, PROMPT, cfg.vocabSize);
      const ours = new ReferenceModel(cfg, randomModelTensors(cfg, 'f32', 31)).forward(PROMPT);
      const { rel, argmaxAgree } = compareLogits(ours, theirs, cfg.vocabSize);
      expect(rel, `${label}: relative RMS difference of the logits`).toBeLessThan(3e-3);
      expect(argmaxAgree).toBe(PROMPT.length);
    },
    60_000,
  );

  it('writes bf16 matrices as f16 (faster in the WebAssembly build of llama.cpp), and llama.cpp still computes the reference logits', async () => {
    const cfg = testConfig('llama');
    const tensors = randomModelTensors(cfg, 'bf16', 17);
    const files = {
      config: cfg,
      tensors: async function* () {
        yield* tensors;
      },
    } as unknown as LoadedModelFiles;
    const gguf = await bytes(await cpuGgufFromSafetensors(files, { eos: 0, bos: null }));
    const file = await readGguf(memoryBytes(gguf));
    const types = new Set(file.tensors.map((t) => `${t.ne.length}:${t.type.name}`));
    expect([...types].sort()).toEqual(['1:F32', '2:F16']);
    const path = join(dir, 'bf16.gguf');
    writeFileSync(path, gguf);
    const theirs = await llamaCppLogits(llama, path, PROMPT, cfg.vocabSize);
    const ours = new ReferenceModel(cfg, tensors).forward(PROMPT);
    const { rel, argmaxAgree } = compareLogits(ours, theirs, cfg.vocabSize);
    expect(rel).toBeLessThan(3e-3);
    expect(argmaxAgree).toBe(PROMPT.length);
  }, 60_000);

  it("converts bf16 to f16 exactly in f16's normal range, rounds tiny values to its subnormals, clamps huge ones", () => {
    const bf16 = (x: number) => new Uint32Array(new Float32Array([x]).buffer)[0] >>> 16;
    const values = [0, -0.5, 1, 0.0123, -3.140625, 65280, 7e-5, 1e-6, 1e-9, 1e6, -1e6];
    const out = new Uint16Array(bf16AsF16(new Uint8Array(Uint16Array.from(values.map(bf16)).buffer)).buffer);
    const got = Array.from(out, f16BitsToF32);
    const exact = values.map((v) => bf16BitsToF32(bf16(v)));
    for (const i of [0, 1, 2, 3, 4, 5, 6]) expect(got[i]).toBe(exact[i]);
    expect(Math.abs(got[7] - exact[7])).toBeLessThanOrEqual(2 ** -25); // half an f16 subnormal step
    expect(got[8]).toBe(0);
    expect([got[9], got[10]]).toEqual([65504, -65504]);
  });

  it('refuses a family it does not convert, saying to use a GGUF', async () => {
    await expect(cpuGgufFromSafetensors(filesOf(testConfig('phi3'), 1), { eos: 0, bos: null })).rejects.toThrow(
      /cannot convert.*phi3.*Download its GGUF instead/,
    );
  });
});

describe('the placeholder vocabulary', () => {
  it('round-trips ids through text, and llama.cpp tokenizes that text into exactly the ids', async () => {
    const cfg = testConfig('qwen2');
    const ids = [0, 1, 2, 3, 32, 210, 209, 7, 7, 100, 0];
    expect(placeholderIds(placeholderText(ids))).toEqual(ids);
    expect(() => placeholderIds('a')).toThrow(/not a placeholder token/);
    const path = join(dir, 'vocab.gguf');
    writeFileSync(path, await bytes(await cpuGgufFromSafetensors(filesOf(cfg, 5), { eos: 3, bos: 1 })));
    const model = await llama.loadModel({ modelPath: path, gpuLayers: 0 });
    // As llama.cpp's server tokenizes a prompt: with special tokens parsed and BOS/EOS added where the vocabulary says.
    expect(model.tokenize(placeholderText(ids), true).map(Number)).toEqual(ids);
    await model.dispose();
  });

  it('rewrites a GGUF header and keeps every tensor and its bytes', async () => {
    const cfg = testConfig('llama');
    const original = await bytes(await cpuGgufFromSafetensors(filesOf(cfg, 9), { eos: 0, bos: null }));
    const file = await readGguf(memoryBytes(original));
    const rewritten = await bytes(cpuGgufFromGguf(new Blob([original]), file, cfg.vocabSize, { eos: 2, bos: 1 }));
    const again = await readGguf(memoryBytes(rewritten));
    expect(again.metadata.get('tokenizer.ggml.eos_token_id')?.value).toBe(2);
    expect(again.tensors.map((t) => t.name)).toEqual(file.tensors.map((t) => t.name));
    for (const [i, t] of again.tensors.entries()) {
      expect(await readGgufTensor(memoryBytes(rewritten), t)).toEqual(await readGgufTensor(memoryBytes(original), file.tensors[i]));
    }
  });
});
