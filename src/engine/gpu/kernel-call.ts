/**
 * KernelCall: one prepared dispatch (pipeline, bind group, its own small uniform buffer, grid size),
 * made once by a kernel wrapper's `encode(...)` and recorded into any number of compute passes.
 * Decode graphs build their calls once and replay them every step (record once, replay: no bind group
 * or uniform creation on the hot path); tests build, record, submit and dispose.
 *
 * Not here: what the kernels compute (../kernels), when to submit (the caller owns the encoder).
 */
import { alignTo } from './buffers';
import type { KernelContext } from './context';

/** A storage binding: a whole buffer, or a range of one (offset a multiple of 256 bytes). */
export type BufferRef = GPUBuffer | GPUBufferBinding;

/** Bytes visible through a binding. */
export function bindingSize(ref: BufferRef): number {
  if (ref instanceof GPUBuffer) return ref.size;
  return ref.size ?? ref.buffer.size - (ref.offset ?? 0);
}

/** The bind-group resource of a binding. */
export function asBinding(ref: BufferRef): GPUBufferBinding {
  return ref instanceof GPUBuffer ? { buffer: ref } : ref;
}

export class KernelCall {
  constructor(
    readonly label: string,
    readonly pipeline: GPUComputePipeline,
    readonly bindGroup: GPUBindGroup,
    readonly workgroups: [number, number, number],
    private readonly uniforms: GPUBuffer | null,
  ) {}

  /** Records the dispatch into `pass` (counted by the profiler). Never submits. */
  record(pass: GPUComputePassEncoder, ctx: KernelContext): void {
    if (this.workgroups[0] === 0 || this.workgroups[1] === 0 || this.workgroups[2] === 0) return;
    pass.setPipeline(this.pipeline);
    pass.setBindGroup(0, this.bindGroup);
    ctx.profiler.dispatch(pass, this.label, ...this.workgroups);
  }

  /** Frees the uniform buffer; the call must not be recorded again. Safe right after submission. */
  dispose(): void {
    this.uniforms?.destroy();
  }
}

export interface CallSpec {
  label: string;
  pipeline: GPUComputePipeline;
  layout: GPUBindGroupLayout;
  /** Storage bindings: [binding number, buffer] (kernels/spec-kernel.ts `specCall` derives them from a spec). */
  buffers: Array<[number, BufferRef]>;
  /** The packed uniform block and its binding number, when the kernel has one. */
  uniforms?: { binding: number; data: ArrayBuffer };
  workgroups: [number, number, number];
}

/** Builds a KernelCall, checking the grid against the device limit. */
export function makeCall(ctx: KernelContext, spec: CallSpec): KernelCall {
  for (const w of spec.workgroups) {
    if (w > ctx.maxWorkgroupsPerDimension) {
      throw new Error(`${spec.label}: ${w} workgroups in one dimension exceeds the device limit ${ctx.maxWorkgroupsPerDimension}`);
    }
  }
  let uniformBuffer: GPUBuffer | null = null;
  const entries: GPUBindGroupEntry[] = spec.buffers.map(([binding, b]) => ({ binding, resource: asBinding(b) }));
  if (spec.uniforms) {
    const data = spec.uniforms.data;
    uniformBuffer = ctx.device.createBuffer({
      label: `${spec.label}.uniforms`,
      size: Math.max(16, alignTo(data.byteLength, 16)),
      usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST,
    });
    ctx.device.queue.writeBuffer(uniformBuffer, 0, data);
    entries.push({ binding: spec.uniforms.binding, resource: { buffer: uniformBuffer } });
  }
  const bindGroup = ctx.device.createBindGroup({ label: spec.label, layout: spec.layout, entries });
  return new KernelCall(spec.label, spec.pipeline, bindGroup, spec.workgroups, uniformBuffer);
}

/**
 * Records `lists` of calls, in order, into one compute pass of `encoder` and returns the pass, still
 * open for the caller's further work (the sampler). While the profiler times kernels
 * (profiler.ts), each call gets a timed pass of its own instead, and the pass returned is a fresh
 * one labelled `<label>.rest`.
 */
export function recordCalls(
  ctx: KernelContext,
  encoder: GPUCommandEncoder,
  label: string,
  ...lists: ReadonlyArray<readonly KernelCall[]>
): GPUComputePassEncoder {
  const profiler = ctx.profiler;
  if (!profiler.timingKernels) {
    const pass = profiler.beginComputePass(encoder, label);
    for (const calls of lists) for (const c of calls) c.record(pass, ctx);
    return pass;
  }
  for (const calls of lists)
    for (const c of calls) {
      const pass = profiler.beginComputePass(encoder, c.label);
      c.record(pass, ctx);
      pass.end();
    }
  return profiler.beginComputePass(encoder, `${label}.rest`);
}

/**
 * Records the calls into one compute pass of a new encoder, submits once, waits, disposes. Tests and
 * tools: a validation error (an invalid pipeline, a bad binding) is thrown, not just logged.
 */
export async function runCalls(ctx: KernelContext, calls: KernelCall[], label = 'run'): Promise<void> {
  ctx.device.pushErrorScope('validation');
  const encoder = ctx.device.createCommandEncoder({ label });
  recordCalls(ctx, encoder, label, calls).end();
  ctx.profiler.submit(ctx.device.queue, [encoder.finish()]);
  const error = await ctx.device.popErrorScope();
  await ctx.device.queue.onSubmittedWorkDone();
  for (const c of calls) c.dispose();
  if (error) throw new Error(`${label} (${calls.map((c) => c.label).join(', ')}): ${error.message}`);
}
