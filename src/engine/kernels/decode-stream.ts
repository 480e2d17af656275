/**
 * DecodeStream: the buffer the fused decode kernels share within a step, f32 [1 + P (+ 2), rows, C]:
 * block 0 is the residual stream of the batch (rows = the most sequences a step decodes), blocks
 * 1..P the MLP partial sums of the last `mlp` dispatch (one per F-slice, docs/engine.md "Decode step").
 * One buffer for all keeps each fused kernel within the 8 storage bindings every device has.
 *
 * The step writes the residual (embedding gather into block 0), then per layer qkv reads
 * residual + pending partials, o_proj folds the partials and its output into the residual, mlp writes
 * new partials; after the last layer DecodeFinalize folds them in and lm_head reads the residual.
 *
 * With sandwich norms (Gemma 3) a branch output is normalised over its whole row before it joins the
 * residual, which no workgroup owning a few columns can do in place. Two more blocks then: `mid`, the
 * residual between a layer's attention and its MLP, and `branch`, o_proj's output. The residual
 * ping-pongs: qkv reads mid + norm(partials) and writes block 0, mlp reads block 0 + norm(branch) and
 * writes mid; each kernel reads one block and writes the other, so no workgroup overwrites what
 * another still stages (decode-graph.ts).
 * Not here: q, attention partials, logits (their own buffers).
 */
import type { MlpActivation } from './swiglu';

export class DecodeStream {
  readonly buffer: GPUBuffer;

  constructor(
    device: GPUDevice,
    /** Rows of each block: the largest batch of a step. */
    readonly rows: number,
    /** Hidden size. */
    readonly C: number,
    /** MLP partial-sum blocks (DecodeMlp's slice count). */
    readonly partials: number,
    /** Hold the `mid` and `branch` blocks of a model with sandwich norms. */
    readonly sandwich = false,
  ) {
    const blocks = 1 + partials + (sandwich ? 2 : 0);
    this.buffer = device.createBuffer({
      label: `decode-stream[${blocks}x${rows}x${C}]`,
      size: blocks * rows * C * 4,
      usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC,
    });
  }

  /** Element offset of residual row b. */
  residual(b: number): number {
    return b * this.C;
  }

  /** Element offset of partial block p, row b. */
  partial(p: number, b: number): number {
    return (1 + p) * this.rows * this.C + b * this.C;
  }

  /** Block index of `mid` (sandwich streams only). */
  get midBlock(): number {
    if (!this.sandwich) throw new Error('DecodeStream: no mid block without sandwich norms');
    return 1 + this.partials;
  }

  /** Block index of `branch` (sandwich streams only). */
  get branchBlock(): number {
    return this.midBlock + 1;
  }

  destroy(): void {
    this.buffer.destroy();
  }
}

/** The model dims the fused decode kernels take (the caller reads them off its model's config). */
export interface DecodeShape {
  /** Hidden size. */
  C: number;
  /** Intermediate (MLP) size. */
  F: number;
  NH: number;
  NKV: number;
  HS: number;
  /** Rotated dims of a head (Phi-3 partial rotary), even, <= HS. */
  rotaryDim: number;
  /** Qwen3's and Gemma's per-head q_norm / k_norm. */
  qkNorm: boolean;
  /** Gemma's sandwich norms: o_proj and down_proj outputs are RMS-normalised before the residual add. */
  sandwich: boolean;
  /** The gate's activation: silu (SwiGLU) or gelu_tanh (Gemma's GeGLU). */
  act: MlpActivation;
  /** RMSNorm epsilon. */
  eps: number;
}
