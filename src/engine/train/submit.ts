/**
 * Submitting the trainer's GPU work: one command submission per micro-step (docs/style.md, docs/design.md
 * "Engine principles"): an optional clear of the gradients, one compute pass with every call of
 * the micro-batch in order, then buffer-to-buffer copies of the few values that come back (per-row
 * logprobs and entropies, the gradient norm) into a mappable staging buffer that is read once per
 * step. Validation errors are raised, never only logged.
 *
 * Not here: what the calls compute (graph-*.ts), the step's order of submissions (session.ts).
 */
import { recordCalls, type KernelCall } from '../gpu/kernel-call';
import type { KernelContext } from '../gpu/context';

export interface Copy {
  src: GPUBuffer;
  srcOffset: number;
  /** Byte offset in the staging buffer. */
  dstOffset: number;
  bytes: number;
}

/** A mappable buffer the step's copies land in, read back once. */
export class Staging {
  readonly buffer: GPUBuffer;

  constructor(device: GPUDevice, bytes: number) {
    this.buffer = device.createBuffer({
      label: 'train.staging',
      size: Math.max(16, Math.ceil(bytes / 16) * 16),
      usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST,
    });
  }

  async read(): Promise<Float32Array> {
    await this.buffer.mapAsync(GPUMapMode.READ);
    const out = new Float32Array(this.buffer.getMappedRange().slice(0));
    this.buffer.unmap();
    return out;
  }

  destroy(): void {
    this.buffer.destroy();
  }
}

export interface SubmitOptions {
  label: string;
  /** Zero these buffers before the pass (the gradients at a step's first micro-batch). */
  clear?: GPUBuffer[];
  /** Copies after the pass into `staging`. */
  copies?: Copy[];
  staging?: Staging;
}

/**
 * Records `calls` into one compute pass, submits once, and checks for validation errors. The
 * calls are kept by the caller and disposed once the GPU is done with them.
 */
export async function submitCalls(ctx: KernelContext, calls: KernelCall[], opts: SubmitOptions): Promise<void> {
  const device = ctx.device;
  device.pushErrorScope('validation');
  const encoder = device.createCommandEncoder({ label: opts.label });
  for (const b of opts.clear ?? []) encoder.clearBuffer(b);
  recordCalls(ctx, encoder, opts.label, calls).end();
  for (const c of opts.copies ?? []) {
    if (!opts.staging) throw new Error(`${opts.label}: copies need a staging buffer`);
    encoder.copyBufferToBuffer(c.src, c.srcOffset, opts.staging.buffer, c.dstOffset, c.bytes);
  }
  ctx.profiler.submit(device.queue, [encoder.finish()]);
  const error = await device.popErrorScope();
  if (error) throw new Error(`${opts.label}: ${error.message}`);
}
