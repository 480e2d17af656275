/**
 * SpecKernel, the base of every kernel family's wrapper (its layouts, pipelines and calls from its
 * spec), and the helpers it is built on: the layout pair (bind group + pipeline) and the calls
 * derived from a kernel spec (spec.ts), the subgroup setting to compose shaders with, a placeholder
 * buffer for bindings a variant does not read, and the shape checks wrappers run before encoding.
 * Not here: any kernel's math.
 */
import type { KernelContext } from '../gpu/context';
import type { BufferRef, KernelCall } from '../gpu/kernel-call';
import { asBinding, bindingSize, makeCall } from '../gpu/kernel-call';
import type { DType } from '../tensor/dtype';
import { composeShader, type ShaderConst } from './shader';
import { bindingNumbers, entryBindings, packUniformValues, type KernelSpec, type UniformValues } from './spec';

export interface KernelLayout {
  bindGroup: GPUBindGroupLayout;
  pipeline: GPUPipelineLayout;
  /** The entry point this layout serves (a spec's `entryPoints`), or all bindings. */
  entry?: string;
}

/** The bind-group and pipeline layout of a spec (of one entry point's bindings when given). */
export function specLayout(ctx: KernelContext, spec: KernelSpec, entry?: string): KernelLayout {
  const names = entryBindings(spec, entry);
  if (names.length > ctx.maxStorageBuffersPerStage) {
    throw new Error(`${spec.name}: needs ${names.length} storage bindings, the device allows ${ctx.maxStorageBuffersPerStage}`);
  }
  const { storage, uniform } = bindingNumbers(spec);
  const entries: GPUBindGroupLayoutEntry[] = names.map((n) => ({
    binding: storage[n],
    visibility: GPUShaderStage.COMPUTE,
    buffer: { type: spec.bindings[n].access === 'read' ? 'read-only-storage' : 'storage' },
  }));
  if (uniform !== null) entries.push({ binding: uniform, visibility: GPUShaderStage.COMPUTE, buffer: { type: 'uniform' } });
  entries.sort((a, b) => a.binding - b.binding);
  const label = entry ? `${spec.name}.${entry}` : spec.name;
  const bindGroup = ctx.device.createBindGroupLayout({ label, entries });
  return { bindGroup, pipeline: ctx.device.createPipelineLayout({ label, bindGroupLayouts: [bindGroup] }), entry };
}

export interface SpecCallArgs {
  /** Defaults to the spec's name. */
  label?: string;
  pipeline: GPUComputePipeline;
  layout: KernelLayout;
  /** One buffer per binding the layout's entry point uses, by the spec's binding names. */
  buffers: Record<string, BufferRef>;
  /** The uniform block's fields by name (spec.ts `packUniformValues`). */
  uniforms?: UniformValues;
  workgroups: [number, number, number];
}

/**
 * A KernelCall bound by name: a missing buffer, a name the spec does not have, or a bad uniform
 * field throws, naming the kernel and the binding or field. Buffers of bindings the layout's entry
 * point does not use are ignored (one set of buffers can serve every entry point of a family).
 */
export function specCall(ctx: KernelContext, spec: KernelSpec, a: SpecCallArgs): KernelCall {
  const { uniform } = bindingNumbers(spec);
  const buffers = storageEntries(spec, a.layout, a.buffers);
  if ((uniform === null) !== (a.uniforms === undefined)) {
    throw new Error(`${spec.name}: ${uniform === null ? 'the kernel has no uniform block' : 'the uniform block is missing'}`);
  }
  return makeCall(ctx, {
    label: a.label ?? spec.name,
    pipeline: a.pipeline,
    layout: a.layout.bindGroup,
    buffers,
    uniforms: uniform === null ? undefined : { binding: uniform, data: packUniformValues(spec, a.uniforms!) },
    workgroups: a.workgroups,
  });
}

/** [binding number, buffer] of each storage binding the layout uses, from buffers by name (checked). */
function storageEntries(spec: KernelSpec, layout: KernelLayout, named: Record<string, BufferRef>): Array<[number, BufferRef]> {
  const { storage } = bindingNumbers(spec);
  for (const k of Object.keys(named)) if (!(k in storage)) throw new Error(`${spec.name}: unknown binding ${k}`);
  return entryBindings(spec, layout.entry).map((n): [number, BufferRef] => {
    const ref = named[n];
    if (ref === undefined) throw new Error(`${spec.name}: binding ${n} is missing`);
    return [storage[n], ref];
  });
}

/**
 * A bind group by name over a uniform buffer the caller owns and rewrites (the sampler's per-step
 * sizes), for kernels that bind once and dispatch many times without a KernelCall.
 */
export function specBindGroup(
  ctx: KernelContext,
  spec: KernelSpec,
  layout: KernelLayout,
  buffers: Record<string, BufferRef>,
  uniforms: GPUBuffer,
): GPUBindGroup {
  const { uniform } = bindingNumbers(spec);
  if (uniform === null) throw new Error(`${spec.name}: the kernel has no uniform block`);
  const entries: GPUBindGroupEntry[] = storageEntries(spec, layout, buffers).map(([binding, ref]) => ({
    binding,
    resource: asBinding(ref),
  }));
  entries.push({ binding: uniform, resource: { buffer: uniforms } });
  return ctx.device.createBindGroup({ label: spec.name, layout: layout.bindGroup, entries });
}

/** What a SpecKernel composes one pipeline from, besides its spec (shader.ts composeShader). */
export interface PipelineParts {
  /** Defaults to the spec's name. */
  label?: string;
  /** The spec, when the family has several (lora's shrink and expand, the sampler's passes); default the kernel's own. */
  spec?: KernelSpec;
  /** Defaults to `main`. With a spec's `entryPoints`, the layout holds only that entry's bindings. */
  entryPoint?: string;
  /** The spec's shader variant (`spec.shaders`), default `main`. */
  variant?: string;
  consts?: Record<string, ShaderConst>;
  /**
   * Values of the WGSL `override`s the shader declares (KV_BLOCK, the attention kernels' sizes),
   * given at pipeline creation; the PipelineCache keys on them beside the text.
   */
  overrides?: Record<string, number>;
  /** Include the reduction helpers, over the context's subgroups where it has them. */
  reductions?: boolean;
  /** Packed weight bindings: WGSL variable -> dtype. */
  weights?: Record<string, DType>;
}

/** A call of a SpecKernel: specCall's arguments, of the kernel's own spec unless told, for an entry point's layout. */
export interface SpecKernelCallArgs extends Omit<SpecCallArgs, 'layout'> {
  spec?: KernelSpec;
  /** The entry point whose layout the call binds (a spec with `entryPoints`). */
  entryPoint?: string;
}

/**
 * The base of a kernel family's wrapper (docs/style.md "For Hearth" 4): the layouts of its spec (one per
 * entry point of a spec with `entryPoints`, one per spec of a family with several), made once on
 * first use; pipelines composed from the spec's shader text (the cache keys on the text and the
 * overrides); and calls bound by name. A subclass keeps what is its own: checks, constants, uniform
 * values and grid, and its one `encode(args): KernelCall[]` (docs/engine.md "Kernel conventions").
 */
export abstract class SpecKernel {
  private readonly layouts = new Map<KernelSpec, Map<string, KernelLayout>>();

  protected constructor(
    protected readonly ctx: KernelContext,
    protected readonly spec: KernelSpec,
  ) {
    // A spec that binds everything in one entry point has one layout: made now, so a spec the
    // device cannot bind fails at construction.
    if (!spec.entryPoints) this.layout(spec);
  }

  /** The base class of a family with one spec: `class Gemv extends SpecKernel.of(GEMV_SPEC)`, constructed from a context. */
  static of(spec: KernelSpec) {
    abstract class OfSpec extends SpecKernel {
      constructor(ctx: KernelContext) {
        super(ctx, spec);
      }
    }
    return OfSpec;
  }

  /**
   * The family's one signature (docs/engine.md "Kernel conventions"): one object of named buffers,
   * dims and flags in, the calls in recording order out. Declared here so that a wrapper with
   * another shape (positional arguments, a single call) does not compile.
   */
  abstract encode(args: never): KernelCall[];

  /** The layout of a spec (the kernel's own by default) for an entry point (all bindings when the spec lists none). */
  protected layout(spec: KernelSpec = this.spec, entryPoint?: string): KernelLayout {
    const entry = spec.entryPoints && entryPoint !== undefined ? entryPoint : undefined;
    let bySpec = this.layouts.get(spec);
    if (!bySpec) this.layouts.set(spec, (bySpec = new Map()));
    let layout = bySpec.get(entry ?? '');
    if (!layout) bySpec.set(entry ?? '', (layout = specLayout(this.ctx, spec, entry)));
    return layout;
  }

  protected pipeline(p: PipelineParts = {}): GPUComputePipeline {
    const spec = p.spec ?? this.spec;
    const entryPoint = p.entryPoint ?? 'main';
    const body = spec.shaders[p.variant ?? 'main'];
    if (!body) throw new Error(`${spec.name}: no shader variant ${p.variant}`);
    return this.ctx.pipelines.get({
      label: p.label ?? spec.name,
      layout: this.layout(spec, entryPoint).pipeline,
      entryPoint,
      constants: p.overrides,
      code: composeShader({
        spec,
        subgroups: p.reductions ? subgroupsOf(this.ctx) : null,
        reductions: p.reductions,
        consts: p.consts,
        weights: p.weights,
        body,
      }),
    });
  }

  /** A call of a spec's layout (specCall); the spec defaults to the kernel's own, the label to the spec's name. */
  protected call(a: SpecKernelCallArgs): KernelCall {
    const { spec = this.spec, entryPoint, ...rest } = a;
    return specCall(this.ctx, spec, { ...rest, layout: this.layout(spec, entryPoint) });
  }

  /**
   * A bind group of a spec's layout over a uniform buffer the kernel owns and rewrites (the
   * sampler's per-step sizes), for calls that are bound once and recorded many times.
   */
  protected bindGroup(spec: KernelSpec, buffers: Record<string, BufferRef>, uniforms: GPUBuffer, entryPoint?: string): GPUBindGroup {
    return specBindGroup(this.ctx, spec, this.layout(spec, entryPoint), buffers, uniforms);
  }
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

/** checkElements for `rows` rows of `cols` elements, `stride` apart, from `offset`. */
export function checkRows(label: string, what: string, ref: BufferRef, rows: number, cols: number, stride = cols, offset = 0): void {
  checkElements(label, what, ref, offset + (rows - 1) * stride + cols);
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
