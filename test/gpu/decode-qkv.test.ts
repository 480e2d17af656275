import { afterAll, describe, expect, it } from 'vitest';
import { readF32 } from '../../src/engine/gpu/buffers';
import { runCalls } from '../../src/engine/gpu/kernel-call';
import { decodeQkvArgs } from '../../src/engine/model/weights/kernel-args';
import type { Architecture, ModelConfig } from '../../src/engine/model/config/model-config';
import type { DType } from '../../src/engine/tensor/dtype';
import { layerUsesRope, ropeFreqs } from '../../src/engine/model/config/rope';
import { DecodeQkv } from '../../src/engine/kernels/decode-qkv';
import { expectClose } from '../../src/engine/reference/check';
import { linearForward } from '../../src/engine/reference/linear';
import { Rng } from '../../src/engine/tensor/random';
import { rmsnormForward } from '../../src/engine/reference/rmsnorm';
import { ropeForward } from '../../src/engine/reference/rope';
import { destroyContexts, kernelContext, read, TOL, zeros } from './dense-helpers';
import { batchWithCache, cacheOffset, filledStream, testModel } from './decode-helpers';

afterAll(destroyContexts);

// One dtype per architecture keeps every dtype covered without compiling each kernel 9 times.
describe('fused decode qkv', () => {
  // The large shapes (C = 768, HS = 64) make a workgroup walk its rows in several groups and
  // stage activations in two chunks; without q/k-norm a 64-dim head spreads over several workgroups.
  const large = { hiddenSize: 768, numHeads: 8, numKvHeads: 2, headDim: 64, intermediateSize: 300 };
  const cases: Array<[Architecture, DType, boolean, Partial<ModelConfig>, number[]]> = [
    // GQA ratios 3 (llama), 1 (qwen2: 4 q heads, 4 kv heads) and 7 (qwen3: 7 q heads, 1 kv head);
    // batches of 3, 1 and 8 rows.
    ['llama', 'bf16', true, {}, [0, 37, 16]],
    ['qwen2', 'f16', true, { numHeads: 4, numKvHeads: 4 }, [9]],
    ['qwen3', 'f32', true, { numHeads: 7, numKvHeads: 1 }, [0, 37, 16, 1, 2, 15, 31, 32]],
    ['qwen3', 'bf16', false, {}, [5, 0, 16]],
    ['llama', 'f16', true, large, [3, 40, 16]],
    ['qwen3', 'bf16', true, large, [3, 40, 16]],
    // Phi-3: fused qkv_proj, partial rotary (12 of 16 dims), LongRoPE switching at position 24;
    // SmolLM3: layer 1 (the one run here) is a NoPE layer.
    ['phi3', 'bf16', true, {}, [0, 37, 23, 24]],
    ['phi3', 'f16', true, large, [3, 40]],
    ['smollm3', 'f32', true, {}, [5, 30]],
  ];
  for (const [arch, dtype, subgroups, overrides, positions] of cases) {
    const shape = overrides.hiddenSize ? `, C ${overrides.hiddenSize}, B ${positions.length}` : '';
    it(`${arch} (${dtype}${subgroups ? '' : ', no subgroups'}${shape}): norm, q/k/v with bias and q/k-norm, RoPE, paged K/V and q`, async () => {
      const ctx = await kernelContext({ subgroups });
      const rng = new Rng(31);
      const { cfg, weights, ref } = await testModel(ctx, arch, dtype, 32, overrides);
      const { hiddenSize: C, numHeads: NH, numKvHeads: NKV, headDim: HS } = cfg;
      const B = positions.length;
      const { stream, h } = filledStream(ctx, rng, B, C, 4, 3);
      const { cache, rowsBuffer, tables } = batchWithCache(ctx, rng, cfg, positions);
      const q = zeros(ctx, B * NH * HS);
      const l = 1;
      await runCalls(ctx, [
        ...new DecodeQkv(ctx).encode({
          ...decodeQkvArgs(weights, l),
          stream,
          pending: 3,
          rows: rowsBuffer,
          blockTable: cache.blockTable,
          maxBlocksPerSeq: cache.maxBlocksPerSeq,
          k: cache.k[l],
          v: cache.v[l],
          q,
          B,
        }),
      ]);
      // Reference: x = rmsnorm(h); q, k, v; q/k-norm; RoPE at each row's position.
      const w = ref.layers[l];
      const x = new Float32Array(B * C);
      rmsnormForward(x, null, h, w.inputNorm, B, C, cfg.rmsNormEps);
      const rq = new Float32Array(B * NH * HS);
      const rk = new Float32Array(B * NKV * HS);
      const rv = new Float32Array(B * NKV * HS);
      linearForward(rq, x, w.q, w.qBias, B, C, NH * HS);
      linearForward(rk, x, w.k, w.kBias, B, C, NKV * HS);
      linearForward(rv, x, w.v, w.vBias, B, C, NKV * HS);
      if (w.qNorm && w.kNorm) {
        rmsnormForward(rq, null, rq, w.qNorm, B * NH, HS, cfg.rmsNormEps);
        rmsnormForward(rk, null, rk, w.kNorm, B * NKV, HS, cfg.rmsNormEps);
      }
      if (layerUsesRope(cfg, l)) {
        const freqs = ropeFreqs(cfg);
        ropeForward(rq, rq, positions, freqs, B, NH, HS);
        ropeForward(rk, rk, positions, freqs, B, NKV, HS);
      }
      expectClose(await read(ctx, q, B * NH * HS), rq, TOL, 'q');
      const kc = await readF32(ctx.device, cache.k[l], cache.k[l].size / 4);
      const vc = await readF32(ctx.device, cache.v[l], cache.v[l].size / 4);
      const gotK = new Float32Array(B * NKV * HS);
      const gotV = new Float32Array(B * NKV * HS);
      positions.forEach((pos, b) => {
        for (let kh = 0; kh < NKV; kh++) {
          const o = cacheOffset(tables[b], pos, kh, NKV, HS);
          gotK.set(kc.subarray(o, o + HS), (b * NKV + kh) * HS);
          gotV.set(vc.subarray(o, o + HS), (b * NKV + kh) * HS);
        }
      });
      expectClose(gotK, rk, TOL, 'k in cache');
      expectClose(gotV, rv, TOL, 'v in cache');
      // Nothing else in the cache was written (it starts zeroed).
      const written = B * NKV * HS;
      expect(kc.filter((v) => v !== 0).length).toBeLessThanOrEqual(written);
      expect(kc.filter((v) => v !== 0).length).toBeGreaterThan(written * 0.9);
      cache.destroy();
      weights.destroy();
    });
  }
});
