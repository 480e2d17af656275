/**
 * The readback of a ModelRunner step (model-runner.ts): a pool of mappable staging buffers, reused
 * from step to step, and the wait for a submitted step's validation error scope together with its
 * staging buffer's map (one GPU round trip), which hands back the step's output bytes.
 *
 * Not here: what the bytes mean (the sampler's and PromptLogprobs' decoders), recording the copies.
 */
import type { StepResult } from './step-spec';

/** A submitted step awaiting its readback. */
export interface SubmittedStep {
  graph: StepResult['graph'];
  staging: GPUBuffer | null;
  sampleBytes: number;
  promptBytes: number;
  readbackBytes: number;
  dispatches: number;
}

export class StagingPool {
  private readonly free: GPUBuffer[] = [];

  constructor(private readonly device: GPUDevice) {}

  /** A mappable buffer of at least `bytes` (rounded up to 4), from the pool or new. */
  take(bytes: number): GPUBuffer {
    const size = alignTo4(bytes);
    const i = this.free.findIndex((b) => b.size >= size);
    if (i >= 0) return this.free.splice(i, 1)[0];
    return this.device.createBuffer({
      label: 'step.readback',
      size: Math.max(256, size),
      usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST,
    });
  }

  /**
   * Pops the step's error scope and maps its staging buffer together; throws if either failed. The
   * step's bytes (null when it read nothing back); the buffer returns to the pool in every case.
   */
  async read(s: SubmittedStep): Promise<ArrayBuffer | null> {
    const { staging } = s;
    const size = alignTo4(s.readbackBytes);
    const mapped = staging
      ? staging.mapAsync(GPUMapMode.READ, 0, size).then(
          () => null,
          (e: unknown) => e,
        )
      : Promise.resolve(null);
    const [error, mapError] = await Promise.all([this.device.popErrorScope(), mapped]);
    if (error || mapError) {
      if (staging) {
        if (!mapError) staging.unmap();
        this.free.push(staging);
      }
      throw new Error(`ModelRunner: the ${s.graph} step failed: ${error ? `GPU validation: ${error.message}` : String(mapError)}`);
    }
    if (!staging) return null;
    const bytes = staging.getMappedRange(0, size).slice(0);
    staging.unmap();
    this.free.push(staging);
    return bytes;
  }

  destroy(): void {
    for (const b of this.free) b.destroy();
    this.free.length = 0;
  }
}

function alignTo4(n: number): number {
  return Math.ceil(n / 4) * 4;
}
