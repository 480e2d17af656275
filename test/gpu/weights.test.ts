import { afterAll, describe, expect, it } from 'vitest';
import { readBytes, readF32 } from '../../src/engine/gpu/buffers';
import type { PackedMatrix } from '../../src/engine/gpu/packed-tensor';
import { tensorToF32 } from '../../src/engine/tensor/tensor-data';
import { ropeTable } from '../../src/engine/model/config/rope';
import { blockLayout } from '../../src/engine/tensor/dtype';
import { type TensorData } from '../../src/engine/tensor/tensor-data';
import { layerNames } from '../../src/engine/model/weights/parameter-plan';
import { WeightSet } from '../../src/engine/model/weights/weight-set';
import { dequantizeTensor } from '../../src/engine/model/quant/dequant';
import { randomModelTensors, testConfig } from '../../src/engine/reference/random-model';
import { randomQuantizedModel } from '../../src/engine/reference/random-quantized';
import { destroyContexts, kernelContext } from './dense-helpers';

afterAll(destroyContexts);

/** Rows [r0, r0 + n) of a packed matrix read back and decoded, padding dropped. */
async function readRows(device: GPUDevice, m: PackedMatrix, r0: number, n: number): Promise<Float32Array> {
  const out = new Float32Array(n * m.cols);
  for (let r = r0; r < r0 + n; r++) {
    const { chunk, index } = m.locate(r);
    const { blockSize, typeSize } = blockLayout(chunk.dtype);
    const rowBytes = (m.cols / blockSize) * typeSize;
    const bytes = new Uint8Array(await readBytes(device, chunk.buffer, Math.ceil(rowBytes / 4) * 4, index * chunk.rowBytes));
    const row: TensorData = { name: m.label, dtype: chunk.dtype, shape: [m.cols], data: bytes.subarray(0, rowBytes) };
    out.set(dequantizeTensor(row), (r - r0) * m.cols);
  }
  return out;
}

const byName = (ts: TensorData[], name: string) => tensorToF32(ts.find((t) => t.name === name)!);

describe('WeightSet', () => {
  for (const [arch, dtype] of [
    ['llama', 'bf16'],
    ['qwen2', 'f16'],
    ['qwen3', 'f32'],
  ] as const) {
    it(`puts every ${arch} tensor (${dtype}) where the kernels look for it`, async () => {
      const ctx = await kernelContext();
      const cfg = testConfig(arch, {
        hiddenSize: 36,
        intermediateSize: 44,
        vocabSize: 31,
        numHeads: 3,
        numKvHeads: 1,
        headDim: arch === 'qwen3' ? 20 : 12,
      });
      const tensors = randomModelTensors(cfg, dtype, 3);
      const ws = await WeightSet.upload(ctx.device, cfg, tensors, { ropePositions: 10 });
      const { hiddenSize: C, headDim: HS, intermediateSize: F } = cfg;
      const qRows = cfg.numHeads * HS;
      const kvRows = cfg.numKvHeads * HS;
      expect(ws.layers[1].qkv.rowStride).toBe(40); // 36 padded to a multiple of 8
      const l = 1;
      const n = layerNames(l);
      const w = ws.layers[l];
      expect(await readRows(ctx.device, w.qkv, 0, qRows)).toEqual(byName(tensors, n.q));
      expect(await readRows(ctx.device, w.qkv, qRows, kvRows)).toEqual(byName(tensors, n.k));
      expect(await readRows(ctx.device, w.qkv, qRows + kvRows, kvRows)).toEqual(byName(tensors, n.v));
      expect(await readRows(ctx.device, w.gateUp, 0, F)).toEqual(byName(tensors, n.gate));
      expect(await readRows(ctx.device, w.gateUp, F, F)).toEqual(byName(tensors, n.up));
      expect(await readRows(ctx.device, w.down, 0, C)).toEqual(byName(tensors, n.down));
      expect(await readRows(ctx.device, w.o, 0, C)).toEqual(byName(tensors, n.o));
      expect(await readRows(ctx.device, ws.embedding, 0, cfg.vocabSize)).toEqual(byName(tensors, 'model.embed_tokens.weight'));
      expect(ws.lmHead === ws.embedding).toBe(cfg.tieWordEmbeddings);
      if (!cfg.tieWordEmbeddings)
        expect(await readRows(ctx.device, ws.lmHead, 0, cfg.vocabSize)).toEqual(byName(tensors, 'lm_head.weight'));
      const vec = await readF32(ctx.device, ws.vectors, ws.vectors.size / 4);
      expect(vec.subarray(0, 10 * HS)).toEqual(ropeTable(cfg, 10));
      expect(vec.subarray(w.inputNorm, w.inputNorm + C)).toEqual(byName(tensors, n.inputNorm));
      expect(vec.subarray(w.postNorm, w.postNorm + C)).toEqual(byName(tensors, n.postNorm));
      expect(vec.subarray(ws.finalNorm, ws.finalNorm + C)).toEqual(byName(tensors, 'model.norm.weight'));
      expect(w.qkvBias !== null).toBe(cfg.attentionBias);
      if (w.qkvBias !== null) {
        const bias = vec.subarray(w.qkvBias, w.qkvBias + qRows + 2 * kvRows);
        expect(bias).toEqual(new Float32Array([...byName(tensors, n.qBias), ...byName(tensors, n.kBias), ...byName(tensors, n.vBias)]));
      }
      expect(w.qNorm !== null).toBe(cfg.qkNorm);
      if (w.qNorm !== null && w.kNorm !== null) {
        expect(vec.subarray(w.qNorm, w.qNorm + HS)).toEqual(byName(tensors, n.qNorm));
        expect(vec.subarray(w.kNorm, w.kNorm + HS)).toEqual(byName(tensors, n.kNorm));
        const b = ws.vectorBinding(w.qNorm, HS);
        expect(b.offset! % 256).toBe(0);
      }
      expect(ws.gpuBytes).toBeGreaterThan(0);
      ws.destroy();
    });
  }

  it('splits the embedding into row chunks no larger than the chunk size, and counts its bytes', async () => {
    const ctx = await kernelContext();
    const cfg = testConfig('llama', { vocabSize: 103 });
    const tensors = randomModelTensors(cfg, 'f16', 4);
    const rowBytes = cfg.hiddenSize * 2; // 96 f16 = 192 bytes
    const ws = await WeightSet.upload(ctx.device, cfg, tensors, { chunkBytes: 10 * rowBytes + 5, ropePositions: 4 });
    expect(ws.embedding.chunks.map((c) => c.rows)).toEqual([10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 3]);
    expect(ws.embedding.chunks.every((c) => c.buffer.size <= 10 * rowBytes)).toBe(true);
    expect(await readRows(ctx.device, ws.embedding, 95, 8)).toEqual(
      byName(tensors, 'model.embed_tokens.weight').subarray(95 * 96, 103 * 96),
    );
    const matrices = [ws.embedding, ws.lmHead, ...ws.layers.flatMap((l) => [l.qkv, l.o, l.gateUp, l.down])];
    expect(ws.gpuBytes).toBe(matrices.reduce((s, m) => s + m.bytes, 0) + ws.vectors.size);
    ws.destroy();
  });

  it('accepts a stream of tensors and ignores a duplicated lm_head of a tied model', async () => {
    const ctx = await kernelContext();
    const cfg = testConfig('qwen2');
    const tensors = randomModelTensors(cfg, 'bf16', 5);
    async function* stream() {
      for (const t of tensors) yield t;
      yield { ...tensors[0], name: 'lm_head.weight' };
    }
    const ws = await WeightSet.upload(ctx.device, cfg, stream(), { ropePositions: 4 });
    expect(ws.lmHead).toBe(ws.embedding);
    ws.destroy();
  });

  it('refuses missing, misshapen, unexpected or truncated tensors, and rows that are not whole blocks, with a clear error', async () => {
    const ctx = await kernelContext();
    const cfg = testConfig('llama');
    const tensors = randomModelTensors(cfg, 'f16', 6);
    const up = (ts: TensorData[]) => WeightSet.upload(ctx.device, cfg, ts, { ropePositions: 4 });
    await expect(up(tensors.filter((t) => t.name !== 'model.layers.1.mlp.up_proj.weight'))).rejects.toThrow(
      'WeightSet: missing tensor model.layers.1.mlp.up_proj.weight',
    );
    await expect(
      up(tensors.map((t) => (t.name === 'model.layers.0.self_attn.k_proj.weight' ? { ...t, shape: [32, 95] } : t))),
    ).rejects.toThrow('WeightSet: tensor model.layers.0.self_attn.k_proj.weight: shape [32, 95] expected [32, 96]');
    await expect(up([...tensors, { ...tensors[1], name: 'model.layers.0.self_attn.rotary.weight' }])).rejects.toThrow(
      'WeightSet: unexpected tensor model.layers.0.self_attn.rotary.weight',
    );
    await expect(up(tensors.map((t) => (t.name === 'model.norm.weight' ? { ...t, data: t.data.subarray(2) } : t)))).rejects.toThrow(
      /tensor model.norm.weight: 190 bytes for \[96\] f16/,
    );
    // 96 columns are three Q8_0 blocks but not whole Q4_K super-blocks of 256
    const q4k = { ...tensors.find((t) => t.name === 'model.layers.0.mlp.up_proj.weight')!, dtype: 'q4_k' as const };
    await expect(up(tensors.map((t) => (t.name === q4k.name ? q4k : t)))).rejects.toThrow(
      'WeightSet: tensor model.layers.0.mlp.up_proj.weight: [136, 96] q4_k has rows that are not whole q4_k blocks',
    );
  });

  it('keeps block-type matrices as their blocks, and each part of a fused matrix of mixed dtypes in its own', async () => {
    const ctx = await kernelContext();
    const cfg = testConfig('qwen2', { hiddenSize: 64, intermediateSize: 96, numHeads: 4, numKvHeads: 2, headDim: 16, vocabSize: 9 });
    // q and k in Q8_0, v in Q4_0 (llama.cpp's Q4_K_M mixes a layer's q / k / v the same way)
    const dtypeOf = (name: string) => (name.endsWith('v_proj.weight') && name.includes('.1.') ? 'q4_0' : 'q8_0');
    const tensors = randomQuantizedModel(cfg, dtypeOf, 7);
    const ws = await WeightSet.upload(ctx.device, cfg, tensors, { ropePositions: 4 });
    const { hiddenSize: C, intermediateSize: F } = cfg;
    const value = (name: string) => dequantizeTensor(tensors.find((t) => t.name === name)!);
    for (const l of [0, 1]) {
      const n = layerNames(l);
      const w = ws.layers[l];
      // layer 1's qkv: q and k rows in Q8_0, v rows in Q4_0, each as its blocks (no f32 copy)
      expect(w.qkv.segments).toEqual(
        l === 0
          ? [{ dtype: 'q8_0', rows: 128 }]
          : [
              { dtype: 'q8_0', rows: 96 },
              { dtype: 'q4_0', rows: 32 },
            ],
      );
      const blockBytes = (rows: number, typeSize: number) => Math.ceil((rows * (C / 32) * typeSize) / 16) * 16;
      expect(w.qkv.bytes).toBe(l === 0 ? blockBytes(128, 34) : blockBytes(96, 34) + blockBytes(32, 18));
      expect(await readRows(ctx.device, w.qkv, 0, 64)).toEqual(value(n.q));
      expect(await readRows(ctx.device, w.qkv, 64, 32)).toEqual(value(n.k));
      expect(await readRows(ctx.device, w.qkv, 96, 32)).toEqual(value(n.v));
      expect(await readRows(ctx.device, w.gateUp, F, F)).toEqual(value(n.up));
      // down_proj rows are 3 Q8_0 blocks (102 bytes): one zero block pads each row to 136 bytes
      expect(w.down.dtype).toBe('q8_0');
      expect(w.down.rowBytes).toBe(136);
      expect(await readRows(ctx.device, w.down, 0, C)).toEqual(value(n.down));
    }
    expect(ws.embedding.bytes).toBe(Math.ceil((cfg.vocabSize * 2 * 34) / 16) * 16);
    ws.destroy();
  });
});
