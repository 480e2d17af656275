/**
 * LoRA kernels for batches that mix adapters (lora.wgsl): `shrink` U = X A^T and `expand`
 * Y += s U B^T per token row, each row using the A and B of its own adapter slot (S-LoRA / Punica
 * style: one dispatch serves every adapter of the batch). A module group shares its input and writes
 * contiguous output columns, so the fused projections of the engine take one shrink and one expand:
 * qkv (q|k|v over the attention input), o, gateUp (gate|up over the MLP input), down.
 *
 * Where the matrices live is the adapter pool's business (generate/lora-pool.ts): one f32 buffer, a
 * slot table (base, rank, scale) and the per-token slot ids; the slot layout is the one both
 * sides agree on (`loraLayoutOf`, from the module dims the caller gives). Ranks up to LORA_MAX_RANK.
 * Not here: the forward graphs that place these calls (generate/forward-graph.ts). Reference:
 * reference/lora.ts `loraForward`.
 */
import type { KernelContext } from '../gpu/context';
import type { BufferRef, KernelCall } from '../gpu/kernel-call';
import { checkDim, checkElements, checkRows, SpecKernel } from './spec-kernel';
import code from './lora.wgsl?raw';
import { wgslSection } from './shader';
import { params, ro, rw, type KernelSpec, type StructSpec } from './spec';

/** Largest rank the kernels take (U rows are RMAX wide; shrink keeps RMAX / 16 accumulators per thread). */
export const LORA_MAX_RANK = 256;
/** A slot-table entry (`array<Slot>` in WGSL), packed with spec.ts `packStructs`. */
export const LORA_SLOT = {
  name: 'Slot',
  fields: {
    /** Element offset of the slot's matrices in the pool. */
    base: 'u32',
    rank: 'u32',
    /** alpha / r, or alpha / sqrt(r) with rsLoRA. */
    scale: 'f32',
    _pad: 'u32',
  },
} as const satisfies StructSpec;
/** Slot-table entry size in bytes. */
export const LORA_SLOT_BYTES = 4 * Object.keys(LORA_SLOT.fields).length;
/** Modules in the largest group (q|k|v): U holds 3 x RMAX floats per token row. */
export const LORA_GROUP_WIDTH = 3;

export type LoraGroupName = 'qkv' | 'o' | 'gateUp' | 'down';

/** Where a module sits in one layer of a slot, in units of the slot's rank. */
export interface LoraModuleLayout {
  /** The module's name (PEFT's: q_proj, ..., or a fused checkpoint's qkv_proj). */
  module: string;
  in: number;
  out: number;
  /** A at r * (l * layerUnits + aUnits), B at r * (l * layerUnits + bUnits). */
  aUnits: number;
  bUnits: number;
}

export interface LoraLayout {
  /** The model's modules by name; a model has no others. */
  modules: Readonly<Record<string, LoraModuleLayout>>;
  /** Each group's modules, in output-column order. */
  groups: Record<LoraGroupName, readonly string[]>;
  /** Sum over the model's modules of (in + out). */
  layerUnits: number;
  numLayers: number;
}

/**
 * The pool layout of one adapter (every module of every layer, targeted or not) from the model's
 * modules in storage order with their dims and its groups; the caller names them (generate/lora-layout.ts).
 */
export function loraLayoutOf(
  modules: ReadonlyArray<{ module: string; in: number; out: number }>,
  groups: Record<LoraGroupName, readonly string[]>,
  numLayers: number,
): LoraLayout {
  let units = 0;
  const out: Record<string, LoraModuleLayout> = {};
  for (const d of modules) {
    out[d.module] = { module: d.module, in: d.in, out: d.out, aUnits: units, bUnits: units + d.in };
    units += d.in + d.out;
  }
  for (const [g, names] of Object.entries(groups)) {
    for (const m of names) if (!(m in out)) throw new Error(`LoRA layout: group ${g} names ${m}, which is not a module of the model`);
  }
  return { modules: out, groups, layerUnits: units, numLayers };
}

/** f32 elements one adapter of rank r takes in the pool. */
export function loraSlotFloats(layout: LoraLayout, rank: number): number {
  return rank * layout.layerUnits * layout.numLayers;
}

/** The adapter tables every LoRA call reads. */
export interface LoraTables {
  /** f32 pool of every resident adapter. */
  pool: BufferRef;
  /** array<Slot>: base, rank, scale per slot. */
  slots: BufferRef;
  /** u32 [T]: the slot of each token row (0xffffffff: no adapter). */
  tokenSlots: BufferRef;
}

/** One group's LoRA delta: y += s U B^T with U = X A^T, on the rows with an adapter. */
export interface LoraArgs extends LoraTables {
  layout: LoraLayout;
  group: LoraGroupName;
  layer: number;
  /** f32 [T, 3, LORA_MAX_RANK] scratch: written by the shrink, read by the expand. */
  u: BufferRef;
  /** The group's input, row t at xOffset + t * xStride. */
  x: BufferRef;
  xOffset?: number;
  xStride?: number;
  /** The group's output columns, accumulated into: row t at yOffset + t * yStride. */
  y: BufferRef;
  yOffset?: number;
  yStride?: number;
  T: number;
}

const WG = 256;
const TK = 16;
const KT = 2048;

/** The two entry points share slots, pool and per-token slots; shrink reads X and writes U, expand reads U and adds into Y. */
const LORA_SHARED = {
  pool: ro('POOL', 'f32', "every slot's A and B matrices (element offsets from SLOTS[s].base)"),
  slots: ro('SLOTS', LORA_SLOT, 'base, rank, scale of each adapter slot'),
  tokenSlots: ro('TOK', 'u32', "[T] each row's slot, 0xffffffff = none"),
};

// T token rows; K: shrink the input width, expand the group's output columns; x_off, x_stride: the
// rows of X (shrink) or Y (expand); M modules in the group (1..3); units0..2: a_units (shrink) or
// b_units (expand) of module 0..2; width0..2: expand's output columns of module 0..2
const LORA_UNIFORMS = params('T K x_off x_stride layer_units layer M _pad0 units0 units1 units2 _pad1 width0 width1 width2 _pad2');

export const LORA_SHRINK_SPEC: KernelSpec = {
  name: 'lora.shrink',
  bindings: {
    x: ro('X', 'f32', 'X[t, k] at x_off + t * x_stride + k'),
    ...LORA_SHARED,
    u: rw('U', 'f32', '[T, 3, RMAX]'),
  },
  uniforms: LORA_UNIFORMS,
  shaders: { main: [section(code, 'shrink')] },
};

export const LORA_EXPAND_SPEC: KernelSpec = {
  name: 'lora.expand',
  bindings: {
    u: ro('U', 'f32', '[T, 3, RMAX]'),
    ...LORA_SHARED,
    y: rw('Y', 'f32', 'Y[t, c] at x_off + t * x_stride + c, accumulated into'),
  },
  uniforms: LORA_UNIFORMS,
  shaders: { main: [section(code, 'expand')] },
};

const LORA_CONSTS = { WG, TK, KT, RMAX: LORA_MAX_RANK, ROUNDS: LORA_MAX_RANK / (WG / TK) };

/** Batched LoRA: the shrink and the expand entry, one spec each. */
export class LoraKernels extends SpecKernel {
  constructor(ctx: KernelContext) {
    super(ctx, LORA_SHRINK_SPEC);
  }

  /**
   * The shrink, U[t, m, :] = A_m x_t for the group's modules m, then the expand, y_t += s_t U[t] B^T
   * over the group's output columns; both only on rows with an adapter.
   */
  encode(a: LoraArgs): KernelCall[] {
    const mods = a.layout.groups[a.group].map((m) => a.layout.modules[m]);
    const N = mods.reduce((s, m) => s + m.out, 0);
    return [
      this.entryCall('shrink', a, mods, ['x', a.x], mods[0].in, a.xOffset, a.xStride, [mods.length, a.T, 1]),
      this.entryCall('expand', a, mods, ['y', a.y], N, a.yOffset, a.yStride, [Math.ceil(N / WG), a.T, 1]),
    ];
  }

  /** One entry's call over the group's rows of X (shrink) or Y (expand), `width` wide, and the tables both read. */
  private entryCall(
    entry: 'shrink' | 'expand',
    a: LoraArgs,
    mods: LoraModuleLayout[],
    [name, ref]: ['x' | 'y', BufferRef],
    width: number,
    offset = 0,
    stride = width,
    workgroups: [number, number, number],
  ): KernelCall {
    const spec = entry === 'shrink' ? LORA_SHRINK_SPEC : LORA_EXPAND_SPEC;
    checkDim(spec.name, 'T', a.T);
    if (entry === 'shrink' && a.T > this.ctx.maxWorkgroupsPerDimension)
      throw new Error(`${spec.name}: ${a.T} rows exceed one grid dimension`);
    checkRows(spec.name, name, ref, a.T, width, stride, offset);
    checkElements(spec.name, 'u', a.u, a.T * LORA_GROUP_WIDTH * LORA_MAX_RANK);
    checkElements(spec.name, 'tokenSlots', a.tokenSlots, a.T);
    return this.call({
      spec,
      pipeline: this.pipeline({ spec, entryPoint: entry, consts: LORA_CONSTS }),
      buffers: { [name]: ref, u: a.u, pool: a.pool, slots: a.slots, tokenSlots: a.tokenSlots },
      uniforms: loraUniforms(a, mods, width, offset, stride, entry),
      workgroups,
    });
  }
}

/**
 * The uniform block of either entry: rows, the group's width, the X (or Y) rows, the layer, and per
 * module its A units (shrink) or its B units and output columns (expand).
 */
function loraUniforms(a: LoraArgs, mods: LoraModuleLayout[], K: number, x_off: number, x_stride: number, entry: 'shrink' | 'expand') {
  const units = (i: number) => (entry === 'shrink' ? mods[i]?.aUnits : mods[i]?.bUnits) ?? 0;
  const width = (i: number) => (entry === 'expand' ? (mods[i]?.out ?? 0) : 0);
  return {
    T: a.T,
    K,
    x_off,
    x_stride,
    layer_units: a.layout.layerUnits,
    layer: a.layer,
    M: mods.length,
    units0: units(0),
    units1: units(1),
    units2: units(2),
    width0: width(0),
    width1: width(1),
    width2: width(2),
  };
}

/** The shared text plus one entry point's section of lora.wgsl (each section uses only its own spec's bindings). */
function section(text: string, entry: 'shrink' | 'expand'): string {
  return wgslSection(wgslSection(text, entry === 'shrink' ? 'expand' : 'shrink', false), entry, true);
}
