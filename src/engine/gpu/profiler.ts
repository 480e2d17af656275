/**
 * Profiler: counts what the engine asks of the GPU (dispatches per kernel label, command
 * submissions) and, when the device has `timestamp-query` and timing is on, measures compute passes
 * with timestamp writes at their boundaries (WebGPU has no timestamps inside a pass, so a pass is the
 * finest unit; the decode step is one pass, see docs/engine.md).
 *
 * Counters are the device-independent figures the bench reports (dispatches per layer, submissions
 * per step); they cost nothing and are always on. Not here: what a kernel does (kernels/).
 */

export interface ProfileCounts {
  dispatches: number;
  submissions: number;
  /** Dispatches per kernel label. */
  byLabel: Record<string, number>;
}

export interface PassTiming {
  label: string;
  /** GPU time of the pass in nanoseconds (quantised by the browser unless developer features are on). */
  ns: number;
}

export class Profiler {
  dispatches = 0;
  submissions = 0;
  private readonly byLabel = new Map<string, number>();
  private querySet: GPUQuerySet | null = null;
  private resolveBuffer: GPUBuffer | null = null;
  private passLabels: string[] = [];
  private readonly capacity: number;

  /** `timestamps`: measure passes (needs the device's timestamp-query feature); `capacity`: passes per read. */
  constructor(
    private readonly device: GPUDevice,
    opts: { timestamps?: boolean; capacity?: number } = {},
  ) {
    this.capacity = opts.capacity ?? 64;
    if (opts.timestamps && device.features.has('timestamp-query')) {
      this.querySet = device.createQuerySet({ label: 'profiler', type: 'timestamp', count: 2 * this.capacity });
      this.resolveBuffer = device.createBuffer({
        label: 'profiler-resolve',
        size: 16 * this.capacity,
        usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC,
      });
    }
  }

  get timing(): boolean {
    return this.querySet !== null;
  }

  /** Records one dispatch into `pass` and counts it under `label`. */
  dispatch(pass: GPUComputePassEncoder, label: string, x: number, y = 1, z = 1): void {
    pass.dispatchWorkgroups(x, y, z);
    this.dispatches++;
    this.byLabel.set(label, (this.byLabel.get(label) ?? 0) + 1);
  }

  /** Submits and counts one submission. */
  submit(queue: GPUQueue, commandBuffers: GPUCommandBuffer[]): void {
    queue.submit(commandBuffers);
    this.submissions++;
  }

  /** Opens a compute pass, timed when timing is on and there is room for another pass. */
  beginComputePass(encoder: GPUCommandEncoder, label: string): GPUComputePassEncoder {
    if (!this.querySet || this.passLabels.length >= this.capacity) return encoder.beginComputePass({ label });
    const i = this.passLabels.length;
    this.passLabels.push(label);
    return encoder.beginComputePass({
      label,
      timestampWrites: { querySet: this.querySet, beginningOfPassWriteIndex: 2 * i, endOfPassWriteIndex: 2 * i + 1 },
    });
  }

  /**
   * Resolves the timed passes recorded so far into a buffer and returns the durations once the GPU is
   * done. Call after the passes' command buffers were submitted; clears the list of timed passes.
   */
  async readTimings(): Promise<PassTiming[]> {
    if (!this.querySet || !this.resolveBuffer || this.passLabels.length === 0) return [];
    const n = this.passLabels.length;
    const labels = this.passLabels;
    this.passLabels = [];
    const staging = this.device.createBuffer({
      label: 'profiler-read',
      size: 16 * n,
      usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST,
    });
    const encoder = this.device.createCommandEncoder({ label: 'profiler-resolve' });
    encoder.resolveQuerySet(this.querySet, 0, 2 * n, this.resolveBuffer, 0);
    encoder.copyBufferToBuffer(this.resolveBuffer, 0, staging, 0, 16 * n);
    this.device.queue.submit([encoder.finish()]);
    await staging.mapAsync(GPUMapMode.READ);
    const t = new BigUint64Array(staging.getMappedRange().slice(0));
    staging.unmap();
    staging.destroy();
    return labels.map((label, i) => ({ label, ns: Number(t[2 * i + 1] - t[2 * i]) }));
  }

  counts(): ProfileCounts {
    return { dispatches: this.dispatches, submissions: this.submissions, byLabel: Object.fromEntries(this.byLabel) };
  }

  reset(): void {
    this.dispatches = 0;
    this.submissions = 0;
    this.byLabel.clear();
    this.passLabels = [];
  }

  destroy(): void {
    this.querySet?.destroy();
    this.resolveBuffer?.destroy();
  }
}
