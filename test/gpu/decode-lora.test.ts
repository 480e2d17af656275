// DecodeLora (kernels/decode-lora.ts) against plain TypeScript on random inputs: the fold of the
// residual (MLP partials plus the previous layer's LoRA down term, with and without sandwich norms)
// and the three shrinks (q|k|v over the normalised residual, o over the merged attention partials,
// gate|up over the residual the MLP stages), for rows of two adapters of different ranks beside a
// row without one. The hidden size (1088) is past the kernel's 1024-wide input chunk, and rank 24 x 3
// modules past its 16 teams, so both loops take more than one round. The plain case runs without
// subgroups, the sandwich one with them (DecodeLora's sums through group_sum).
import { afterAll, describe, expect, it } from 'vitest';
import { runCalls } from '../../src/engine/gpu/kernel-call';
import { loraLayout } from '../../src/engine/generate/lora-layout';
import { DecodeLora, decodeLoraRowWords } from '../../src/engine/kernels/decode-lora';
import { DecodeStream } from '../../src/engine/kernels/decode-stream';
import { LORA_MAX_RANK, LORA_SLOT, loraSlotFloats, type LoraGroupName } from '../../src/engine/kernels/lora';
import { packStructs } from '../../src/engine/kernels/spec';
import { expectClose } from '../../src/engine/reference/check';
import { linearForward } from '../../src/engine/reference/linear';
import { testConfig } from '../../src/engine/reference/random-model';
import { rmsnormForward } from '../../src/engine/reference/rmsnorm';
import { Rng } from '../../src/engine/tensor/random';
import { randomAttentionRows } from './decode-helpers';
import { destroyContexts, kernelContext, read, TOL, upload } from './dense-helpers';

afterAll(destroyContexts);

const NONE = 0xffffffff;
const cfg = testConfig('llama', { hiddenSize: 1088, numHeads: 4, numKvHeads: 2, headDim: 48, intermediateSize: 200, numLayers: 2 });
const layout = loraLayout(cfg);
const C = cfg.hiddenSize;
const { numHeads: NH, numKvHeads: NKV, headDim: HS } = cfg;
const eps = 1e-5;
const P = 3; // MLP partial blocks
const layer = 1;
/** Rows: adapter slot 0 (rank 24), none, slot 1 (rank 5). */
const adapters = [{ rank: 24, scale: 0.5, base: 0 }, null, { rank: 5, scale: 1.25, base: loraSlotFloats(layout, 24) }];
const B = adapters.length;
const words = decodeLoraRowWords(P);

/** A module's A [r, in] or B [out, r] of an adapter, from the pool. */
function matrix(pool: Float32Array, a: { rank: number; base: number }, l: number, module: string, which: 'A' | 'B') {
  const m = layout.modules[module];
  const units = which === 'A' ? m.aUnits : m.bUnits;
  const at = a.base + a.rank * (l * layout.layerUnits + units);
  return pool.subarray(at, at + a.rank * (which === 'A' ? m.in : m.out));
}

describe('DecodeLora: the fold and the shrinks of LoRA rows on the fused decode graph', () => {
  for (const sandwich of [false, true]) {
    it(`fold + q|k|v shrink, o shrink, gate|up shrink${sandwich ? ' (sandwich norms)' : ''}`, async () => {
      // Without subgroups in one case: DecodeLora's sums take the workgroup-memory path (reduce-shared).
      const ctx = await kernelContext({ subgroups: sandwich });
      const rng = new Rng(sandwich ? 61 : 60);
      const pool = rng.normals(loraSlotFloats(layout, 24) + loraSlotFloats(layout, 5)).map((x) => x * 0.1);
      const slots = packStructs(
        LORA_SLOT,
        adapters.map((a) => (a ? { base: a.base, rank: a.rank, scale: a.scale } : { base: 0, rank: 0, scale: 0 })),
      );
      const tokenSlots = Uint32Array.from(adapters.map((a, i) => (a ? i : NONE)));
      // vectors: input_layernorm at 0, post_attention at C, the branch norm at 2C
      const vectors = rng.normals(3 * C).map((x) => 1 + 0.2 * x);
      const stream = new DecodeStream(ctx.device, B, C, P, sandwich);
      const blocks = 1 + P + (sandwich ? 2 : 0);
      const init = rng.normals(blocks * B * C);
      ctx.device.queue.writeBuffer(stream.buffer, 0, init);
      const block = (k: number, b: number) => init.subarray((k * B + b) * C, (k * B + b + 1) * C);
      // The previous layer's down-shrink partials, one per MLP slice.
      const rows = new Uint32Array(B * words);
      const rowFloats = new Float32Array(rows.buffer);
      const ud = rng.normals(B * P * LORA_MAX_RANK);
      for (let b = 0; b < B; b++)
        for (let s = 0; s < P; s++)
          rowFloats.set(ud.subarray((b * P + s) * LORA_MAX_RANK, (b * P + s + 1) * LORA_MAX_RANK), b * words + 4 + (3 + s) * LORA_MAX_RANK);
      const S = 3;
      const splitLen = 16;
      const lengths = [40, 7, 33];
      const { partials, att } = randomAttentionRows(rng, lengths, NH, NKV, HS, S, splitLen);
      const buffers = {
        layout,
        pool: upload(ctx, pool),
        rows: upload(ctx, rows),
        slots: upload(ctx, new Uint32Array(slots)),
        tokenSlots: upload(ctx, tokenSlots),
        stream,
        vectors: upload(ctx, vectors),
        attention: upload(ctx, partials),
        eps,
        NH,
        HS,
        numSplits: S,
        B,
        layer,
      };
      const kernel = new DecodeLora(ctx);
      const U = async () => new Float32Array(await read(ctx, buffers.rows, B * words));
      const expectU = (got: Float32Array, group: LoraGroupName, x: (b: number) => Float32Array, what: string) => {
        adapters.forEach((a, b) => {
          if (!a) return;
          layout.groups[group].forEach((module, m) => {
            const want = new Float32Array(a.rank);
            linearForward(want, x(b), matrix(pool, a, layer, module, 'A'), null, 1, layout.modules[module].in, a.rank);
            const at = b * words + 4 + m * LORA_MAX_RANK;
            expectClose(got.subarray(at, at + a.rank), want, TOL, `${what}: row ${b} ${module}`);
          });
        });
      };

      // The fold and the q|k|v shrink.
      await runCalls(ctx, kernel.encode({ ...buffers, mode: 'qkv', normOffset: 0, branchNorm: 2 * C, pending: P }));
      const h = adapters.map((a, b) => {
        const y = new Float32Array(C);
        for (let p = 0; p < P; p++) y.forEach((_, k) => (y[k] += block(1 + p, b)[k]));
        if (a) {
          const u = new Float32Array(a.rank);
          for (let s = 0; s < P; s++) u.forEach((_, j) => (u[j] += ud[(b * P + s) * LORA_MAX_RANK + j]));
          const d = new Float32Array(C);
          linearForward(d, u, matrix(pool, a, layer - 1, 'down_proj', 'B'), null, 1, a.rank, C);
          y.forEach((_, k) => (y[k] += a.scale * d[k]));
        }
        if (!sandwich) return block(0, b).map((r, k) => r + y[k]);
        const n = new Float32Array(C);
        rmsnormForward(n, null, y, vectors.subarray(2 * C, 3 * C), 1, C, eps);
        return block(stream.midBlock, b).map((r, k) => r + n[k]);
      });
      const residual = await read(ctx, stream.buffer, B * C);
      h.forEach((want, b) => expectClose(residual.subarray(b * C, (b + 1) * C), want, TOL, `folded residual, row ${b}`));
      const normed = (x: Float32Array, w: number) => {
        const out = new Float32Array(C);
        rmsnormForward(out, null, x, vectors.subarray(w, w + C), 1, C, eps);
        return out;
      };
      const afterQkv = await U();
      expectU(afterQkv, 'qkv', (b) => normed(h[b], 0), 'q|k|v');
      // The header of the row without an adapter says rank 0: the expand terms add nothing there.
      expect(new Uint32Array(afterQkv.buffer)[words + 1]).toBe(0);
      expect(new Uint32Array(afterQkv.buffer)[2 * words + 1]).toBe(5);

      // The o shrink over the merged attention partials.
      await runCalls(ctx, kernel.encode({ ...buffers, mode: 'o' }));
      expectU(await U(), 'o', (b) => att.subarray(b * NH * HS, (b + 1) * NH * HS), 'o');

      // The gate|up shrink over the residual the MLP stages (with sandwich norms: block 0 plus the
      // normalised o_proj output from the branch block).
      const branch = rng.normals(B * C);
      if (sandwich) ctx.device.queue.writeBuffer(stream.buffer, stream.branchBlock * B * C * 4, branch);
      await runCalls(ctx, kernel.encode({ ...buffers, mode: 'gateUp', normOffset: C, branchNorm: 2 * C }));
      const mlpIn = (b: number) => {
        if (!sandwich) return h[b];
        const n = new Float32Array(C);
        rmsnormForward(n, null, branch.subarray(b * C, (b + 1) * C), vectors.subarray(2 * C, 3 * C), 1, C, eps);
        return h[b].map((x, k) => x + n[k]);
      };
      expectU(await U(), 'gateUp', (b) => normed(mlpIn(b), C), 'gate|up');
    });
  }
});
