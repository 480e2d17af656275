/**
 * LoRA on the fused decode graph (docs/engine.md "LoRA in the fused decode step"). A batch with
 * adapter rows keeps the fused decode kernels; their `lora` variants add each row's expand term
 * scale * B U (decode-lora-expand.wgsl) where the projection is made, before any norm, RoPE or
 * activation that follows it, and DecodeLora (decode-lora.wgsl), one workgroup per batch row, makes
 * the U they read:
 *   - `qkv` before DecodeQkv: folds the previous layer's MLP partials and its LoRA down term into the
 *     residual (so nothing is pending after it), writes the row's adapter header, shrinks q|k|v;
 *   - `o` before DecodeOProj: merges the attention partials and shrinks o;
 *   - `gateUp` before DecodeMlp: normalises the residual and shrinks gate|up;
 *   - `fold` after the last layer: the fold alone (in place of DecodeFinalize).
 * DecodeMlp's variant also writes its slice's share of the down shrink, which the next fold sums.
 * Per layer that is 7 dispatches, against the general graph's 19. With sandwich norms (Gemma 3)
 * the fold and the gate|up shrink normalise the branch that joins the residual as the fused kernels do
 * (the fold through the stream's free `branch` block).
 *
 * The per-row scratch (`LU`, u32 [rows, decodeLoraRowWords(P)]) holds the header, the U of the
 * group being applied and the down partials; floats are kept as their bits.
 * Not here: the pool and its tables (generate/lora-pool.ts), the batched LoRA of the general graph
 * (lora.ts), the graph (generate/decode-graph.ts). Reference: reference/lora.ts `loraForward`.
 */
import type { BufferRef, KernelCall } from '../gpu/kernel-call';
import { checkDim, checkElements, SpecKernel } from './spec-kernel';
import code from './decode-lora.wgsl?raw';
import merge from './decode-merge.wgsl?raw';
import pendingSum from './decode-pending.wgsl?raw';
import type { DecodeStream } from './decode-stream';
import { LORA_MAX_RANK, LORA_SLOT, type LoraGroupName, type LoraLayout, type LoraTables } from './lora';
import { params, ro, rw, type BindingSpec, type KernelSpec, type UniformSpec } from './spec';

/** Where a row's down-shrink partials start (u32 words): after the 4-word header and a group's U (3 modules). */
const DOWN_PARTIALS_AT = 4 + 3 * LORA_MAX_RANK;

/** u32 words of one row of the LoRA decode scratch: header, U of a group (3 modules), P down partials. */
export function decodeLoraRowWords(partials: number): number {
  return DOWN_PARTIALS_AT + partials * LORA_MAX_RANK;
}

export const DECODE_LORA_SPEC: KernelSpec = {
  name: 'decode.lora',
  bindings: {
    stream: rw('STREAM', 'f32', '[1 + P, bcap, C]: residual (folded in place by MODE 0), MLP partials'),
    vectors: ro('VEC', 'f32', 'the norm weight at norm_off'),
    attention: ro('AP', 'f32', 'decode-attention partials [B, NH, S, HS + 2] (MODE 1)'),
    pool: ro('POOL', 'f32', "every slot's A and B matrices (lora.wgsl)"),
    slots: ro('SLOTS', LORA_SLOT, 'base, rank, scale of each adapter slot'),
    tokenSlots: ro('TOK', 'u32', "[B] each row's slot, 0xffffffff = none"),
    rows: rw('LU', 'u32', "[B, LROW]: each row's adapter header, U, down partials (bits)"),
  },
  // C hidden size; K the shrink's input width; bcap rows of each stream block; pending MLP partials
  // and ud_pending down-shrink partials to fold (MODE 0); layer, layer_units, M, a0..a2: the shrink's
  // layer, pool units per layer, modules and their A units; down_layer, down_b: the folded down term's
  // layer and B units; norm_off, eps: the norm before the shrink; NH, HS, S: the attention partials;
  // sandwich norms: mid_block, branch_block (stream blocks), branch_norm_off (the norm of the branch
  // joining the residual: the previous layer's post_feedforward one in MODE 0, post_attention in 2)
  uniforms: params(
    'B C K bcap pending ud_pending layer layer_units M a0 a1 a2 down_layer down_b norm_off eps:f32 NH HS S mid_block branch_block branch_norm_off',
  ),
  shaders: { main: [merge, pendingSum, code] },
};

const WG = 256;
const TK = 16;
const KT = 1024;
/** Merge weights (heads x splits) the `o` shrink holds: DecodeOProj's largest cap, so it runs wherever that does. */
const COEF_CAP = 2048;
const MODES = { qkv: 0, fold: 0, o: 1, gateUp: 2 } as const;

export type DecodeLoraMode = keyof typeof MODES;

/** What every LoRA read of a fused decode step shares: the adapter pool, its layout, the row scratch. */
export interface DecodeLoraRefs {
  layout: LoraLayout;
  /** f32 pool of every resident adapter (lora-pool.ts). */
  pool: BufferRef;
  /** u32 [rows, decodeLoraRowWords(P)]: the per-row scratch (step-buffers.ts `loraRows`). */
  rows: BufferRef;
}

export interface DecodeLoraArgs extends DecodeLoraRefs {
  mode: DecodeLoraMode;
  /** The pool's slot table and the step's per-row slots. */
  slots: LoraTables['slots'];
  tokenSlots: LoraTables['tokenSlots'];
  /** The layer whose group is shrunk (ignored by `fold`). */
  layer: number;
  stream: DecodeStream;
  vectors: BufferRef;
  /** The norm applied before the shrink (qkv: input_layernorm, gateUp: post_attention_layernorm). */
  normOffset?: number;
  /**
   * Sandwich norms: the norm of the branch that joins the residual here (qkv and fold: the previous
   * layer's post_feedforward_layernorm; gateUp: the layer's post_attention_layernorm).
   */
  branchNorm?: number | null;
  eps: number;
  /** qkv and fold: MLP partial blocks to fold, 0 at layer 0; with it the previous layer's LoRA down. */
  pending?: number;
  /** DecodeAttention's partials (read by `o`; bound by every mode). */
  attention: BufferRef;
  NH: number;
  HS: number;
  numSplits: number;
  B: number;
}

export class DecodeLora extends SpecKernel.of(DECODE_LORA_SPEC) {
  encode(a: DecodeLoraArgs): KernelCall[] {
    const { layout, stream } = a;
    checkDim('decode.lora', 'B', a.B);
    if (a.B > stream.rows) throw new Error(`decode.lora: ${a.B} rows exceed the stream's ${stream.rows}`);
    const sandwich = stream.sandwich;
    if (sandwich && a.mode !== 'o' && (a.branchNorm ?? null) === null && (a.mode === 'gateUp' || (a.pending ?? 0) > 0))
      throw new Error('decode.lora: sandwich norms need the norm of the branch joining the residual');
    const pending = a.pending ?? 0;
    if (pending > stream.partials) throw new Error(`decode.lora: ${pending} pending partials, the stream holds ${stream.partials}`);
    if (a.mode === 'o' && a.NH * a.numSplits > COEF_CAP)
      throw new Error(`decode.lora: ${a.NH} heads x ${a.numSplits} splits exceed the merge buffer (${COEF_CAP})`);
    const words = decodeLoraRowWords(stream.partials);
    checkElements('decode.lora', 'rows', a.rows, a.B * words);
    checkElements('decode.lora', 'tokenSlots', a.tokenSlots, a.B);
    const group: LoraGroupName | null = a.mode === 'fold' ? null : a.mode;
    const mods = group ? layout.groups[group].map((m) => layout.modules[m]) : [];
    const down = layout.groups.down.map((m) => layout.modules[m]);
    if (down.length !== 1) throw new Error('decode.lora: the down group must be one module');
    const consts = {
      WG,
      TK,
      KT,
      RMAX: LORA_MAX_RANK,
      QMAX: (3 * LORA_MAX_RANK) / (WG / TK),
      LROW: words,
      LORA_UD: DOWN_PARTIALS_AT,
      MODE: MODES[a.mode],
      COEF_CAP,
      SANDWICH: sandwich,
      BB: 1,
    };
    const label = `decode.lora.${a.mode}`;
    const foldsDown = (a.mode === 'qkv' || a.mode === 'fold') && pending > 0;
    return [
      this.call({
        label,
        pipeline: this.pipeline({ label, reductions: true, consts }),
        buffers: {
          stream: stream.buffer,
          vectors: a.vectors,
          attention: a.attention,
          pool: a.pool,
          slots: a.slots,
          tokenSlots: a.tokenSlots,
          rows: a.rows,
        },
        uniforms: {
          B: a.B,
          C: stream.C,
          K: mods[0]?.in ?? 0,
          bcap: stream.rows,
          pending: a.mode === 'qkv' || a.mode === 'fold' ? pending : 0,
          ud_pending: foldsDown ? stream.partials : 0,
          layer: a.layer,
          layer_units: layout.layerUnits,
          M: mods.length,
          a0: mods[0]?.aUnits ?? 0,
          a1: mods[1]?.aUnits ?? 0,
          a2: mods[2]?.aUnits ?? 0,
          // The fold adds the previous layer's down term; `fold` runs after the last layer.
          down_layer: a.mode === 'fold' ? layout.numLayers - 1 : Math.max(0, a.layer - 1),
          down_b: down[0].bUnits,
          norm_off: a.normOffset ?? 0,
          eps: a.eps,
          NH: a.NH,
          HS: a.HS,
          S: a.numSplits,
          mid_block: sandwich ? stream.midBlock : 0,
          branch_block: sandwich ? stream.branchBlock : 0,
          branch_norm_off: a.branchNorm ?? 0,
        },
        workgroups: [a.B, 1, 1],
      }),
    ];
  }
}

/** The uniform fields of a fused decode kernel's expand term (decode-lora-expand.wgsl). */
const LORA_EXPAND_FIELDS = 'lora_layer lora_units lora_m lora_b0 lora_b1 lora_b2 lora_w0 lora_w1';

/** The expand term's uniform values for a group of one layer (zeros without LoRA). */
export function loraExpandUniforms(lora: DecodeLoraRefs | undefined, group: LoraGroupName, layer: number): Record<string, number> {
  const mods = lora ? lora.layout.groups[group].map((m) => lora.layout.modules[m]) : [];
  return {
    lora_layer: layer,
    lora_units: lora?.layout.layerUnits ?? 0,
    lora_m: mods.length,
    lora_b0: mods[0]?.bUnits ?? 0,
    lora_b1: mods[1]?.bUnits ?? 0,
    lora_b2: mods[2]?.bUnits ?? 0,
    lora_w0: mods[0]?.out ?? 0,
    lora_w1: mods[1]?.out ?? 0,
  };
}

/** The expand term's consts. */
export function loraExpandConsts(partials: number): { RMAX: number; LROW: number; LORA_UD: number } {
  return { RMAX: LORA_MAX_RANK, LROW: decodeLoraRowWords(partials), LORA_UD: DOWN_PARTIALS_AT };
}

/**
 * A fused decode kernel's `lora` spec: its bindings plus the pool and the row scratch (read, or
 * written by DecodeMlp's down partials), and its shader text with the `lora` sections kept. Two more
 * storage bindings than the base spec: DecodeQkv's reaches 10, which Chrome offers; a device with
 * fewer decodes LoRA rows through the general graph (decode-graph.ts `fusedLoraFits`).
 */
export function loraVariant(spec: KernelSpec, rows: 'read' | 'read_write', shaders: readonly string[]): KernelSpec {
  const lu: BindingSpec = (rows === 'read' ? ro : rw)('LU', 'u32', "[B, LROW]: each row's adapter header, U, down partials (bits)");
  const bindings = { ...spec.bindings, loraPool: ro('POOL', 'f32', "every slot's A and B matrices (lora.wgsl)"), loraRows: lu };
  const n = Object.keys(bindings).length;
  return { ...spec, name: `${spec.name}.lora`, bindings, ...(n > 8 ? { minStorageLimit: n } : {}), shaders: { main: shaders } };
}

/** The `lora` variant's two extra buffers by binding name (none without LoRA). */
export function loraBuffers(lora: DecodeLoraRefs | undefined): Record<string, BufferRef> {
  return lora ? { loraPool: lora.pool, loraRows: lora.rows } : {};
}

/** A spec's uniform block with the expand term's fields appended. */
export function withLoraFields(fields: string): UniformSpec {
  return params(`${fields} ${LORA_EXPAND_FIELDS}`);
}
