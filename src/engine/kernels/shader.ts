/**
 * Assembling WGSL modules from the .wgsl files of a kernel family: constants baked in as `const`
 * declarations, the family's binding and uniform declarations generated from its spec (spec.ts),
 * packed-weight accessors generated per binding and dtype, the subgroup or shared-memory reduction
 * helpers, and the kernel's own text.
 *
 * Why `const` and not `override`: WGSL sizes function-scope arrays (a thread's accumulators) only
 * with creation-time constants, so tile and batch sizes are baked into the text; the PipelineCache
 * keys on the full text, so each configuration is compiled once.
 *
 * Markers in kernel files: `/*@subgroup-params*\/` in an entry point's parameter list and
 * `/*@subgroup-init*\/` at the top of its body; they become the subgroup builtins (or nothing).
 */
import type { DType } from '../tensor/dtype';
import { wgslDeclarations, type KernelSpec } from './spec';
import packedBf16 from './packed-bf16.wgsl?raw';
import packedBlocks from './packed-blocks.wgsl?raw';
import packedF16 from './packed-f16.wgsl?raw';
import packedF32 from './packed-f32.wgsl?raw';
import packedQ2K from './packed-q2_k.wgsl?raw';
import packedQ3K from './packed-q3_k.wgsl?raw';
import packedQ4K from './packed-q4_k.wgsl?raw';
import packedQ4_0 from './packed-q4_0.wgsl?raw';
import packedQ4_1 from './packed-q4_1.wgsl?raw';
import packedQ5K from './packed-q5_k.wgsl?raw';
import packedQ5_0 from './packed-q5_0.wgsl?raw';
import packedQ5_1 from './packed-q5_1.wgsl?raw';
import packedQ6K from './packed-q6_k.wgsl?raw';
import packedQ8_0 from './packed-q8_0.wgsl?raw';
import reduceShared from './reduce-shared.wgsl?raw';
import reduceSubgroup from './reduce-subgroup.wgsl?raw';
import reduceTree from './reduce-tree.wgsl?raw';

export type ShaderConst = number | boolean | { f32: number } | { i32: number };

// Block types dequantize in the accessor, over the byte helpers of packed-blocks.wgsl.
const PACKED: Record<DType, string> = {
  f32: packedF32,
  f16: packedF16,
  bf16: packedBf16,
  q8_0: `${packedBlocks}\n${packedQ8_0}`,
  q4_0: `${packedBlocks}\n${packedQ4_0}`,
  q4_1: `${packedBlocks}\n${packedQ4_1}`,
  q5_0: `${packedBlocks}\n${packedQ5_0}`,
  q5_1: `${packedBlocks}\n${packedQ5_1}`,
  q2_k: `${packedBlocks}\n${packedQ2K}`,
  q3_k: `${packedBlocks}\n${packedQ3K}`,
  q4_k: `${packedBlocks}\n${packedQ4K}`,
  q5_k: `${packedBlocks}\n${packedQ5K}`,
  q6_k: `${packedBlocks}\n${packedQ6K}`,
};

/** `fn <name>_load1(e)` and `fn <name>_load8(e)` over the binding `<name>: array<vec4<u32>>` of `dtype`. */
export function packedAccessors(name: string, dtype: DType): string {
  return PACKED[dtype].replaceAll('WNAME', name);
}

export function constDecls(consts: Record<string, ShaderConst>): string {
  return Object.entries(consts)
    .map(([k, v]) => {
      if (typeof v === 'boolean') return `const ${k}: bool = ${v};`;
      if (typeof v === 'number') {
        if (!Number.isInteger(v) || v < 0) throw new Error(`shader const ${k} = ${v}: use { f32 } or { i32 } for non-u32 values`);
        return `const ${k}: u32 = ${v}u;`;
      }
      if ('f32' in v) return `const ${k}: f32 = ${Number.isInteger(v.f32) ? `${v.f32}.0` : v.f32};`;
      return `const ${k}: i32 = ${v.i32}i;`;
    })
    .join('\n');
}

export interface ShaderParts {
  /** The family's spec: its uniform struct and binding declarations come first (spec.ts). */
  spec?: KernelSpec;
  /** Use subgroup operations, with the adapter's subgroup size bounds; absent: none. */
  subgroups?: { min: number; max: number } | null;
  /** Include the reduction helpers (reduce-*.wgsl); they need the consts WG and BB. */
  reductions?: boolean;
  consts?: Record<string, ShaderConst>;
  /** Packed weight bindings: name -> dtype. */
  weights?: Record<string, DType>;
  /** Kernel text, in order (core snippets, then the entry file). */
  body: readonly string[];
}

export function composeShader(parts: ShaderParts): string {
  const sg = parts.subgroups ?? null;
  const out: string[] = [];
  if (sg) out.push('enable subgroups;', 'diagnostic(off, subgroup_uniformity);');
  if (parts.consts) out.push(constDecls(parts.consts));
  if (parts.spec) out.push(wgslDeclarations(parts.spec));
  if (parts.reductions) {
    if (sg) out.push(constDecls({ SGMIN: sg.min, SGMAX: sg.max }));
    out.push(reduceTree, sg ? reduceSubgroup : reduceShared);
  }
  for (const [name, dtype] of Object.entries(parts.weights ?? {})) out.push(packedAccessors(name, dtype));
  let text = [...out, ...parts.body].join('\n\n');
  text = text.replaceAll(
    '/*@subgroup-params*/',
    sg ? ', @builtin(subgroup_invocation_id) sg_lane_in: u32, @builtin(subgroup_size) sg_size_in: u32' : '',
  );
  text = text.replaceAll('/*@subgroup-init*/', sg ? 'sg_lane = sg_lane_in; sg_size = sg_size_in;' : '');
  return text;
}

/**
 * A kernel text with its `#ifdef_NAME ... #endif_NAME` sections kept (markers dropped) or removed:
 * one WGSL file for a family whose variants differ by a few lines, each variant's text naming only
 * its own spec's bindings.
 */
export function wgslSection(text: string, name: string, keep: boolean): string {
  const block = new RegExp(`[ \\t]*#ifdef_${name}\\n([\\s\\S]*?)[ \\t]*#endif_${name}\\n`, 'g');
  const out = text.replace(block, (_, body: string) => (keep ? body : ''));
  if (out.includes(`#ifdef_${name}`) || out.includes(`#endif_${name}`)) throw new Error(`wgslSection: unbalanced #ifdef_${name}`);
  return out;
}

/** Smallest power of two >= n (n >= 1). */
export function pow2ceil(n: number): number {
  return 2 ** Math.ceil(Math.log2(Math.max(1, n)));
}

/** Largest power of two <= n (n >= 1). */
export function pow2floor(n: number): number {
  return 2 ** Math.floor(Math.log2(Math.max(1, n)));
}
