/**
 * DecodeQkv: fused decode step 1 (decode-qkv.wgsl): residual + pending MLP partials, input RMSNorm,
 * the fused q|k|v GEMV with bias, Qwen3 q/k-norm, RoPE, K/V into the paged cache, q out.
 *
 * Work split: a workgroup owns U rows of one head for a group of batch rows. Without q/k-norm U is the
 * GEMV group (16 rows: 8 RoPE pairs), so a 64-dim head spreads over 4 workgroups and a 0.5B model's
 * 18 heads give 72 workgroups at batch 1; with q/k-norm a head's norm needs all of it, U = HS. Each
 * workgroup re-reads the residual and the pending partials (P * C floats per batch row, from L2):
 * the price of not spending a dispatch on the reduction, small next to its weight rows when P is a few
 * tens (docs/engine.md "Decode step").
 * Not here: attention (attention-decode.ts), the prefill twin (qkv-prep.ts after the GEMM).
 */
import type { KernelContext } from '../gpu/context';
import type { BufferRef, KernelCall } from '../gpu/kernel-call';
import { makeCall, packUniforms } from '../gpu/kernel-call';
import { KV_BLOCK } from '../model/kv-cache';
import type { WeightSet } from '../model/weights';
import { checkDim, checkElements, kernelLayout, subgroupsOf } from './common';
import code from './decode-qkv.wgsl?raw';
import type { DecodeStream } from './decode-stream';
import core from './gemv-core.wgsl?raw';
import { fitTile, tileConsts } from './gemv-config';
import { composeShader } from './shader';

export interface DecodeQkvArgs {
  weights: WeightSet;
  layer: number;
  stream: DecodeStream;
  /** MLP partial blocks to add to the residual: 0 at layer 0, the slice count after. */
  pending: number;
  /** array<BatchRow> [B] (model/kv-cache.ts). */
  rows: GPUBuffer;
  /** u32 [maxSeqs, maxBlocksPerSeq]. */
  blockTable: GPUBuffer;
  maxBlocksPerSeq: number;
  /** This layer's K and V cache, f32 [numBlocks, NKV, 16, HS]. */
  k: GPUBuffer;
  v: GPUBuffer;
  /** f32 [B, NH, HS], written. */
  q: BufferRef;
  B: number;
}

/** Rows per workgroup unit: the whole head with q/k-norm, else the largest even divisor of HS <= group. */
export function qkvUnit(HS: number, qkNorm: boolean, group: number): number {
  if (qkNorm) return HS;
  for (let u = Math.min(group, HS); u >= 2; u--) if (HS % u === 0 && u % 2 === 0) return u;
  throw new Error(`decode qkv: head dim ${HS} has no even divisor`);
}

export class DecodeQkv {
  private readonly layout;

  constructor(private readonly ctx: KernelContext) {
    this.layout = kernelLayout(ctx, 'decode.qkv', [
      'read-only-storage', // stream: residual + MLP partials
      'read-only-storage', // Wqkv packed
      'read-only-storage', // vectors: RoPE table, norms, biases
      'read-only-storage', // batch rows
      'read-only-storage', // block table
      'storage', // K cache
      'storage', // V cache
      'storage', // q
      'uniform',
    ]);
  }

  encode(a: DecodeQkvArgs): KernelCall {
    const cfg = a.weights.config;
    const w = a.weights.layers[a.layer];
    const C = cfg.hiddenSize;
    const { numHeads: NH, numKvHeads: NKV, headDim: HS } = cfg;
    checkDim('decode.qkv', 'B', a.B);
    if (a.B > a.stream.rows || a.stream.C !== C) throw new Error(`decode.qkv: stream [${a.stream.rows} x ${a.stream.C}] for B ${a.B}, C ${C}`);
    if (a.pending > a.stream.partials) throw new Error(`decode.qkv: ${a.pending} pending partials, the stream holds ${a.stream.partials}`);
    checkElements('decode.qkv', 'q', a.q, a.B * NH * HS);
    checkElements('decode.qkv', 'rows', a.rows, a.B * 4);
    // Without q/k-norm one row per invocation keeps the unit at one GEMV group of 16 rows (more,
    // smaller workgroups at batch 1); with it the unit is the head, walked in groups of 2 rows each.
    const tile = fitTile(this.ctx, C, a.B, (BB) => 4 * (HS * BB + BB), 'decode.qkv', cfg.qkNorm ? {} : { rpt: 1 });
    const U = qkvUnit(HS, cfg.qkNorm, tile.TR * tile.RPT);
    const consts = { ...tileConsts(tile), NORM: true, U, HS, QK_NORM: cfg.qkNorm, HAS_BIAS: w.qkvBias !== null, KV_BLOCK };
    const label = `decode.qkv.${w.qkv.dtype}`;
    const pipeline = this.ctx.pipelines.get({
      label,
      layout: this.layout.pipeline,
      entryPoint: 'main',
      code: composeShader({ subgroups: subgroupsOf(this.ctx), reductions: true, consts, weights: { W: w.qkv.dtype }, body: [core, code] }),
    });
    const uniforms = packUniforms([
      a.B,
      C,
      NH,
      NKV,
      a.stream.rows,
      a.pending,
      w.qkv.rowStride,
      w.inputNorm,
      w.qkvBias ?? 0,
      w.qNorm ?? 0,
      w.kNorm ?? 0,
      a.maxBlocksPerSeq,
      a.weights.ropePositions,
      { f32: cfg.rmsNormEps },
    ]);
    return makeCall(this.ctx, {
      label,
      pipeline,
      layout: this.layout.bindGroup,
      buffers: [a.stream.buffer, w.qkv.single('decode.qkv'), a.weights.vectors, a.rows, a.blockTable, a.k, a.v, a.q],
      uniforms,
      workgroups: [(NH + 2 * NKV) * (HS / U), Math.ceil(a.B / tile.BB), 1],
    });
  }
}
