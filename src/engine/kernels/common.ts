/**
 * Small helpers every kernel wrapper shares: a labelled layout pair (bind group + pipeline), the
 * subgroup setting to compose shaders with, a placeholder buffer for bindings a variant does not read,
 * and the shape checks wrappers run before encoding.
 * Not here: any kernel's math.
 */
import type { KernelContext } from '../gpu/context';
import type { BufferRef } from '../gpu/kernel-call';
import { bindingSize } from '../gpu/kernel-call';
import type { BindingKind } from '../gpu/pipelines';
import { bindGroupLayout } from '../gpu/pipelines';

export interface KernelLayout {
  bindGroup: GPUBindGroupLayout;
  pipeline: GPUPipelineLayout;
}

export function kernelLayout(ctx: KernelContext, label: string, kinds: BindingKind[]): KernelLayout {
  const storage = kinds.filter((k) => k !== 'uniform').length;
  if (storage > ctx.maxStorageBuffersPerStage) {
    throw new Error(`${label}: needs ${storage} storage bindings, the device allows ${ctx.maxStorageBuffersPerStage}`);
  }
  const bindGroup = bindGroupLayout(ctx.device, label, kinds);
  return { bindGroup, pipeline: ctx.device.createPipelineLayout({ label, bindGroupLayouts: [bindGroup] }) };
}

/** The subgroup option of composeShader for this context. */
export function subgroupsOf(ctx: KernelContext): { min: number; max: number } | null {
  return ctx.subgroups ? { min: ctx.subgroupMinSize, max: ctx.subgroupMaxSize } : null;
}

const placeholders = new WeakMap<GPUDevice, { read: GPUBuffer; write: GPUBuffer }>();

/**
 * A 16-byte storage buffer bound where a kernel variant reads (or writes) nothing, e.g. no bias, no
 * row gather, no rstd output. Read and write placeholders are distinct buffers: one dispatch may not
 * bind a buffer both writable and read-only.
 */
export function placeholder(ctx: KernelContext, use: 'read' | 'write' = 'read'): GPUBuffer {
  let p = placeholders.get(ctx.device);
  if (!p) {
    const make = (label: string) => ctx.device.createBuffer({ label, size: 16, usage: GPUBufferUsage.STORAGE });
    p = { read: make('placeholder.read'), write: make('placeholder.write') };
    placeholders.set(ctx.device, p);
  }
  return p[use];
}

/** Throws `label: what` unless the binding holds at least `elements` 4-byte elements. */
export function checkElements(label: string, what: string, ref: BufferRef, elements: number): void {
  const have = bindingSize(ref) / 4;
  if (have < elements) throw new Error(`${label}: ${what} needs ${elements} elements, the binding holds ${have}`);
}

export function checkDim(label: string, name: string, value: number, min = 1): void {
  if (!Number.isInteger(value) || value < min) throw new Error(`${label}: ${name} = ${value} is not an integer >= ${min}`);
}

/** Spreads `groups` workgroups over x and y (each at most the device limit); kernels index wid.x + wid.y * nwg.x. */
export function grid(ctx: KernelContext, groups: number): [number, number, number] {
  const max = ctx.maxWorkgroupsPerDimension;
  if (groups <= max) return [groups, 1, 1];
  const y = Math.ceil(groups / max);
  return [Math.ceil(groups / y), y, 1];
}
