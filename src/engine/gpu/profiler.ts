/**
 * Profiler: counts what the engine asks of the GPU (dispatches per kernel label, command
 * submissions) and, when the device has `timestamp-query` and timing is on, measures compute passes
 * with timestamp writes at their boundaries (WebGPU has no timestamps inside a pass, so a pass is the
 * finest unit; the decode step is one pass, see docs/engine.md).
 *
 * Kernel timing (`startKernelTiming`, for the bench's profile): while on, the calls the engine
 * records go one pass each (kernel-call.ts `recordCalls`), so every kernel gets its own GPU time.
 * Separate passes add the barriers between them that one pass would place only where a buffer is
 * shared, so the sum is an upper bound of the step's time; the shares are what the profile is for.
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

/** Passes one query set times (WebGPU caps a query set at 4096 queries, two per pass). */
const PASSES_PER_SET = 2048;
/** Passes kernel timing can hold before one read: a few training steps' kernels. */
const KERNEL_TIMING_PASSES = 16 * PASSES_PER_SET;

export class Profiler {
  dispatches = 0;
  submissions = 0;
  private readonly byLabel = new Map<string, number>();
  private querySets: GPUQuerySet[] = [];
  private resolveBuffer: GPUBuffer | null = null;
  private passLabels: string[] = [];
  private capacity: number;
  private kernelTiming = false;

  /** `timestamps`: measure passes (needs the device's timestamp-query feature); `capacity`: passes per read. */
  constructor(
    private readonly device: GPUDevice,
    opts: { timestamps?: boolean; capacity?: number } = {},
  ) {
    this.capacity = opts.capacity ?? 64;
    if (opts.timestamps && device.features.has('timestamp-query')) this.allocate(this.capacity);
  }

  /** Query sets and the resolve buffer for `passes` timed passes. */
  private allocate(passes: number): void {
    this.destroy();
    this.capacity = passes;
    for (let first = 0; first < passes; first += PASSES_PER_SET) {
      const count = 2 * Math.min(PASSES_PER_SET, passes - first);
      this.querySets.push(this.device.createQuerySet({ label: 'profiler', type: 'timestamp', count }));
    }
    this.resolveBuffer = this.device.createBuffer({
      label: 'profiler-resolve',
      size: 16 * passes,
      usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC,
    });
  }

  get timing(): boolean {
    return this.querySets.length > 0;
  }

  /** Whether recorded calls go one timed pass each (kernel-call.ts `recordCalls`). */
  get timingKernels(): boolean {
    return this.kernelTiming;
  }

  /**
   * Times every kernel recorded from now on in a pass of its own; false (and nothing changes)
   * without `timestamp-query`. Passes past the capacity run untimed.
   */
  startKernelTiming(): boolean {
    if (!this.device.features.has('timestamp-query')) return false;
    if (this.capacity < KERNEL_TIMING_PASSES || !this.timing) this.allocate(KERNEL_TIMING_PASSES);
    this.passLabels = [];
    this.kernelTiming = true;
    return true;
  }

  /** Ends kernel timing and returns the timed passes (call once their work was submitted). */
  async stopKernelTiming(): Promise<PassTiming[]> {
    this.kernelTiming = false;
    return this.readTimings();
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
    if (!this.timing || this.passLabels.length >= this.capacity) return encoder.beginComputePass({ label });
    const i = this.passLabels.length;
    this.passLabels.push(label);
    const querySet = this.querySets[Math.floor(i / PASSES_PER_SET)];
    const j = i % PASSES_PER_SET;
    return encoder.beginComputePass({
      label,
      timestampWrites: { querySet, beginningOfPassWriteIndex: 2 * j, endOfPassWriteIndex: 2 * j + 1 },
    });
  }

  /**
   * Resolves the timed passes recorded so far into a buffer and returns the durations once the GPU is
   * done. Call after the passes' command buffers were submitted; clears the list of timed passes.
   */
  async readTimings(): Promise<PassTiming[]> {
    if (!this.resolveBuffer || this.passLabels.length === 0) return [];
    const n = this.passLabels.length;
    const labels = this.passLabels;
    this.passLabels = [];
    const staging = this.device.createBuffer({
      label: 'profiler-read',
      size: 16 * n,
      usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST,
    });
    const encoder = this.device.createCommandEncoder({ label: 'profiler-resolve' });
    for (let first = 0; first < n; first += PASSES_PER_SET) {
      const count = Math.min(PASSES_PER_SET, n - first);
      encoder.resolveQuerySet(this.querySets[first / PASSES_PER_SET], 0, 2 * count, this.resolveBuffer, 16 * first);
    }
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
    for (const q of this.querySets) q.destroy();
    this.querySets = [];
    this.resolveBuffer?.destroy();
    this.resolveBuffer = null;
  }
}
