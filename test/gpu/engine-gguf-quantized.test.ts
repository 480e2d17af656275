/**
 * A GGUF in every block type Hearth loads runs in the Engine: one random Llama (3 layers, hidden
 * size 256 so that K-quants apply) whose matrices mix all 13 types the way llama.cpp's Q*_K_M files
 * mix types, one type per engine matrix (gate/up share one; q/k/v too, but for layer 1 whose attn_v is
 * Q6_K beside Q4_K attn_q / attn_k, as in Q4_K_M files: its fused qkv keeps each in its own blocks),
 * is loaded through loadGgufModelFiles (llama's permuted q/k rows, Llama 3's rope_freqs).
 * - Against Hearth's reference forward on the same weights dequantized to f32: greedy tokens and
 *   prompt logprobs to 1e-4 (f32 rounding: the kernels dequantize exactly what the reference does;
 *   6e-6 measured).
 * - Against llama.cpp (node-llama-cpp, CPU, F32 KV cache) on the very same file: the prompt
 *   logprobs of the top tokens. llama.cpp multiplies quantized weights by activations it quantizes
 *   to 8 bits (Q8_0/Q8_K), so it differs from an f32 computation by more than rounding: the bound is
 *   the one test/unit/model/gguf-llama-cpp.test.ts holds Hearth's reference forward to (relative RMS
 *   0.03; 0.006 measured), the engine being within f32 rounding of that reference. Q5_1 is the embedding, not a
 *   projection: llama.cpp's prebuilt x86 Q5_1 matmul disagrees with its own dequantizer (see there).
 * - The bundled model quantized on load (model/quant/quantize-on-load.ts: a safetensors model's matrices
 *   made Q4_K blocks on the GPU as it loads, model/quant/quantize-upload.ts), served by the same engine: its
 *   blocks read back against the CPU quantizer's, and the same check against the reference on the
 *   blocks it made, dequantized.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getLlama, type Llama } from 'node-llama-cpp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../../src/engine/generate/engine';
import type { PromptLogprob } from '../../src/engine/generate/types';
import { loadGgufModelFiles } from '../../src/engine/model/gguf/gguf-repo';
import { quantizeOnLoad } from '../../src/engine/model/quant/quantize-on-load';
import type { PackedMatrix } from '../../src/engine/gpu/packed-tensor';
import type { TensorData } from '../../src/engine/tensor/tensor-data';
import { layerNames } from '../../src/engine/model/weights/parameter-plan';
import { type WeightSet } from '../../src/engine/model/weights/weight-set';
import { loadModelFiles, type LoadedModelFiles } from '../../src/engine/model/files/repo';
import { FilesSource } from '../../src/engine/model/sources/files-source';
import { greedyDecode, ReferenceModel } from '../../src/engine/reference/model';
import { dequantizedTensor } from '../../src/engine/reference/random-quantized';
import { randomGguf, type GgufFixture } from '../unit/model/gguf-fixtures';
import { llamaCppLogits } from '../unit/model/llama-cpp-oracle';
import { readMatrixRows } from './dense-helpers';
import { bundled, collect, request, testEngine } from './engine-helpers';

const MODEL = 'gguf/mixed-types';
const PROMPT = [72, 101, 108, 108, 111, 256, 44, 257, 32, 119, 111, 114, 108, 100];
/** The type of each GGUF matrix: every listed type once at least, one per engine matrix. */
const TYPE_OF: Readonly<Record<string, string>> = {
  'token_embd.weight': 'Q5_1',
  'output.weight': 'Q6_K',
  ...layerTypes(0, ['Q8_0', 'Q4_0', 'Q4_1', 'Q5_0']),
  ...layerTypes(1, [['Q4_K', 'Q6_K'], 'Q3_K', 'Q2_K', 'Q5_K']),
  ...layerTypes(2, ['F32', 'F16', 'BF16', 'Q4_K']),
};
/** qkv: one type, or [the type of q and k, the type of v]. */
function layerTypes(l: number, [qkv, o, gateUp, down]: [string | [string, string], string, string, string]): Record<string, string> {
  const b = `blk.${l}`;
  const [qk, v] = typeof qkv === 'string' ? [qkv, qkv] : qkv;
  return {
    [`${b}.attn_q.weight`]: qk,
    [`${b}.attn_k.weight`]: qk,
    [`${b}.attn_v.weight`]: v,
    [`${b}.attn_output.weight`]: o,
    [`${b}.ffn_gate.weight`]: gateUp,
    [`${b}.ffn_up.weight`]: gateUp,
    [`${b}.ffn_down.weight`]: down,
  };
}

let engine: Engine;
let fx: GgufFixture;
let files: LoadedModelFiles;
let dir: string;
let llama: Llama | undefined;

beforeAll(async () => {
  fx = randomGguf((name) => TYPE_OF[name], 4242, TYPE_OF['token_embd.weight'], 'llama', 3);
  dir = mkdtempSync(join(tmpdir(), 'hearth-gguf-gpu-'));
  writeFileSync(join(dir, 'mixed.gguf'), fx.gguf);
  files = await loadGgufModelFiles(new FilesSource([new File([fx.gguf as BlobPart], 'mixed.gguf')]), ['mixed.gguf']);
  engine = await testEngine();
  await engine.loadFiles(MODEL, files);
});
afterAll(async () => {
  engine?.gpu.device.destroy();
  await llama?.dispose();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** log-softmax of each row of `logits` ([T, V]). */
function logSoftmax(logits: Float32Array, V: number): Float32Array {
  const out = new Float32Array(logits.length);
  for (let r = 0; r < logits.length / V; r++) {
    const row = logits.subarray(r * V, (r + 1) * V);
    const max = Math.max(...row);
    const lse = max + Math.log(row.reduce((s, x) => s + Math.exp(x - max), 0));
    for (let v = 0; v < V; v++) out[r * V + v] = row[v] - lse;
  }
  return out;
}

/** Every (position, token, logprob) the engine reported: the prompt's own tokens and each position's top 20. */
function reported(lps: (PromptLogprob | null)[]): Array<[number, number, number]> {
  return lps.flatMap((p, i) =>
    p
      ? [
          [i - 1, p.tokenId, p.logprob] as [number, number, number],
          ...p.top.map((t) => [i - 1, t.id, t.logprob] as [number, number, number]),
        ]
      : [],
  );
}

describe('a GGUF mixing all 13 block types in the Engine', () => {
  it('loads each matrix in its own type, no f32 expansion, a fused qkv of Q4_K q / k and Q6_K v included', async () => {
    const types = new Map(files.weights.map((w) => [w.name, w.dtype]));
    expect([...new Set(types.values())].sort()).toEqual(
      ['bf16', 'f16', 'f32', 'q2_k', 'q3_k', 'q4_0', 'q4_1', 'q4_k', 'q5_0', 'q5_1', 'q5_k', 'q6_k', 'q8_0'].sort(),
    );
    expect(types.get('model.embed_tokens.weight')).toBe('q5_1');
    expect(types.get('model.layers.1.mlp.down_proj.weight')).toBe('q5_k');
    expect(files.config.ropeScaling?.type).toBe('freq_factors');

    const { hiddenSize: C, numHeads: NH, numKvHeads: NKV, headDim: HS } = fx.config;
    const qkv = (await engine.residentWeights(MODEL)).layers[1].qkv;
    expect(qkv.segments).toEqual([
      { dtype: 'q4_k', rows: (NH + NKV) * HS },
      { dtype: 'q6_k', rows: NKV * HS },
    ]);
    // The parts' blocks (Q4_K: 144 bytes per 256 weights; Q6_K: 210, a row of one block padded with a
    // zero block to whole u32 words, gpu/packed-tensor.ts), not (NH + 2 NKV) HS x C f32s.
    expect(C).toBe(256);
    const q4k = ((NH + NKV) * HS * 144) / 16;
    const q6k = (NKV * HS * 2 * 210) / 16;
    expect(qkv.bytes).toBe(Math.ceil(q4k) * 16 + Math.ceil(q6k) * 16);
  });

  it("gives the reference's greedy tokens and prompt logprobs on the dequantized weights, and llama.cpp's", async () => {
    const V = fx.config.vocabSize;
    const ref = new ReferenceModel(fx.config, fx.tensors);
    const got = await collect(engine.generate(request(MODEL, PROMPT, { maxTokens: 6, promptLogprobs: 20, ignoreEos: true })), 1);
    expect(got.tokens[0]).toEqual(greedyDecode(ref, PROMPT, 6));

    const entries = reported(got.prefilled!.promptLogprobs!);
    expect(entries.length).toBe((PROMPT.length - 1) * 21);
    const want = logSoftmax(ref.forward(PROMPT), V);
    const ours = entries.map(([pos, id, lp]) => [lp, want[pos * V + id]]);
    const refErr = Math.max(...ours.map(([a, b]) => Math.abs(a - b)));
    expect(refErr, 'max |engine - reference| over the reported logprobs').toBeLessThan(1e-4);

    llama = await getLlama({ gpu: false, build: 'never', logLevel: 'error' as never });
    const theirs = logSoftmax(await llamaCppLogits(llama, join(dir, 'mixed.gguf'), PROMPT, V), V);
    let num = 0;
    let den = 0;
    for (const [pos, id, lp] of entries) {
      num += (lp - theirs[pos * V + id]) ** 2;
      den += theirs[pos * V + id] ** 2;
    }
    const rel = Math.sqrt(num / den);
    expect(rel, 'relative RMS of engine - llama.cpp over the reported logprobs').toBeLessThan(0.03);
    // The top token agrees wherever llama.cpp's own top two are apart by more than its error.
    const top = got.prefilled!.promptLogprobs!.slice(1).map((p) => p!.top[0].id);
    const theirTop = PROMPT.slice(1).map((_, i) => {
      const row = theirs.subarray(i * V, (i + 1) * V);
      return row.indexOf(Math.max(...row));
    });
    expect(top.filter((t, i) => t === theirTop[i]).length).toBeGreaterThanOrEqual(PROMPT.length - 2);
  });
});

describe('a safetensors model quantized to Q4_K on load in the Engine', () => {
  it("makes Q4_K blocks on the GPU as the CPU quantizer does, and gives the reference's greedy tokens and prompt logprobs on them, dequantized", async () => {
    const q4 = quantizeOnLoad(await loadModelFiles(bundled('hearth/tiny-chat')), 'q4_k');
    // Loaded as it is: the engine uploads the file's bf16 tensors and quantizes them on the GPU.
    await engine.loadFiles('tiny-chat/q4_k', q4);
    const weights = await engine.residentWeights('tiny-chat/q4_k');
    // Projections in Q4_K; the tied embedding (the lm_head) stays bf16, as quantize-on-load.ts says.
    expect([weights.layers[0].qkv.dtype, weights.layers[3].down.dtype, weights.embedding.dtype]).toEqual(['q4_k', 'q4_k', 'bf16']);
    // The GPU's blocks against the CPU quantizer's (its reference: test/gpu/quantize-blocks.test.ts).
    const device = engine.kernelContext.device;
    const gpu: TensorData[] = [];
    let blocks = 0;
    let same = 0;
    for await (const t of q4.tensors()) {
      const where = matrixOf(weights, t.name);
      if (!where || t.dtype !== 'q4_k') {
        gpu.push(t);
        continue;
      }
      const data = await readMatrixRows(device, where.matrix, where.row0, t.shape[0]);
      gpu.push({ ...t, data });
      for (let b = 0; b < data.length; b += 144) {
        blocks++;
        if (Buffer.from(data.subarray(b, b + 144)).equals(Buffer.from(t.data.subarray(b, b + 144)))) same++;
      }
    }
    expect(blocks).toBeGreaterThan(0);
    expect(same / blocks, 'Q4_K blocks identical to the CPU quantizer').toBeGreaterThan(0.95);
    const ref = new ReferenceModel(q4.config, gpu.map(dequantizedTensor));
    const V = q4.config.vocabSize;
    const prompt = PROMPT.slice(0, 8);
    const got = await collect(engine.generate(request('tiny-chat/q4_k', prompt, { maxTokens: 2, promptLogprobs: 5, ignoreEos: true })), 1);
    expect(got.tokens[0]).toEqual(greedyDecode(ref, prompt, 2));
    const want = logSoftmax(ref.forward(prompt), V);
    const err = Math.max(...reported(got.prefilled!.promptLogprobs!).map(([pos, id, lp]) => Math.abs(lp - want[pos * V + id])));
    expect(err, 'max |engine - reference| over the reported logprobs').toBeLessThan(1e-4);
  });
});

/** The matrix of the weight set holding a projection, and its first row there. */
function matrixOf(w: WeightSet, name: string): { matrix: PackedMatrix; row0: number } | null {
  for (const [l, layer] of w.layers.entries()) {
    const n = layerNames(l);
    const q = w.config.numHeads * w.config.headDim;
    const kv = w.config.numKvHeads * w.config.headDim;
    const F = w.config.intermediateSize;
    const at: Record<string, [PackedMatrix, number]> = {
      [n.q]: [layer.qkv, 0],
      [n.k]: [layer.qkv, q],
      [n.v]: [layer.qkv, q + kv],
      [n.o]: [layer.o, 0],
      [n.gate]: [layer.gateUp, 0],
      [n.up]: [layer.gateUp, F],
      [n.down]: [layer.down, 0],
    };
    if (at[name]) return { matrix: at[name][0], row0: at[name][1] };
  }
  return null;
}
