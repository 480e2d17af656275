/**
 * DecodeStream: the buffer the fused decode kernels share within a step, f32 [1 + P, rows, C]:
 * block 0 is the residual stream of the batch (rows = the most sequences a step decodes), blocks
 * 1..P the MLP partial sums of the last `mlp` dispatch (one per F-slice, docs/engine.md "Decode step").
 * One buffer for both keeps each fused kernel within the 8 storage bindings every device has.
 *
 * The step writes the residual (embedding gather into block 0), then per layer qkv reads
 * residual + pending partials, o_proj folds the partials and its output into the residual, mlp writes
 * new partials; after the last layer DecodeFinalize folds them in and lm_head reads the residual.
 * Not here: q, attention partials, logits (their own buffers).
 */
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
  ) {
    this.buffer = device.createBuffer({
      label: `decode-stream[${1 + partials}x${rows}x${C}]`,
      size: (1 + partials) * rows * C * 4,
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
  /** Qwen3's per-head q_norm / k_norm. */
  qkNorm: boolean;
  /** RMSNorm epsilon. */
  eps: number;
}
