/**
 * Specs (spec.ts) of the sampler's four passes (sampler.ts) and of prompt logprobs (logprobs.ts).
 * Every pass takes the step's sizes as the uniform block at binding 0 and shares the per-step
 * buffers by name. A step's rows are the storage struct SAMPLE_ROW (its WGSL is generated, sampler.ts
 * packs it through packStructs); RowInfo, which only the GPU writes, stays in sampler-common.wgsl.
 *
 * Not here: the buffers and the per-step writes (sampler.ts), the passes' math (sampler-*.wgsl).
 */
import logprobsWgsl from './logprobs.wgsl?raw';
import commonWgsl from './sampler-common.wgsl?raw';
import drawWgsl from './sampler-draw.wgsl?raw';
import finishWgsl from './sampler-finish.wgsl?raw';
import processWgsl from './sampler-process.wgsl?raw';
import radixWgsl from './sampler-radix.wgsl?raw';
import reduceWgsl from './sampler-reduce.wgsl?raw';
import selectWgsl from './sampler-select.wgsl?raw';
import { RowFlag, hasPenalties } from '../sampling/sampler-row';
import type { ResolvedSampling } from '../sampling/sampling-params';
import { params, ro, rw, type BindingSpec, type KernelSpec, type StructSpec } from './spec';

/** Sizes of the current sampler step: V the row length of logits, B rows this step, num_chunks = ceil(V / CHUNK), W = ceil(V / 32). */
const SAMPLER_DIMS = params('V B num_chunks W', { var: 'dims', struct: 'SamplerDims', first: true });

/** One row of a sampler step (`array<SampleRow>`), from a ResolvedSampling and the row's place. */
export const SAMPLE_ROW = {
  name: 'SampleRow',
  fields: {
    /** Sequence slot: row of the counts and masks buffers. */
    slot: 'u32',
    /** sampling/sampler-row.ts RowFlag bits (F_* in sampler-common.wgsl). */
    flags: 'u32',
    /** 1 for greedy rows. */
    temperature: 'f32',
    /** 1 = off. */
    top_p: 'f32',
    /** 0 = off. */
    top_k: 'u32',
    /** 0 = off. */
    min_p: 'f32',
    repetition: 'f32',
    frequency: 'f32',
    presence: 'f32',
    seed_lo: 'u32',
    seed_hi: 'u32',
    /** Tokens generated so far: the noise counter. */
    step: 'u32',
    /** Top logprobs wanted, 0..MAX_TOP. */
    num_top: 'u32',
    /** Word offset of this row's lists in `edits`. */
    edit_offset: 'u32',
    /** (id, f32 bits) pairs at edit_offset. */
    bias_count: 'u32',
    /** Banned ids after the pairs. */
    ban_count: 'u32',
  },
} as const satisfies StructSpec;

/** One SAMPLE_ROW's values (spec.ts `packStructs` packs them). */
export type SampleRowValues = Record<keyof typeof SAMPLE_ROW.fields, number>;
/** Bytes of one packed SAMPLE_ROW. */
export const SAMPLE_ROW_BYTES = 4 * Object.keys(SAMPLE_ROW.fields).length;

/** Where a row stands this step, beside its resolved sampling. */
export interface RowPlacement {
  slot: number;
  outputLen: number;
  editOffset: number;
  banCount: number;
  hasGrammar: boolean;
  updateCounts: boolean;
}

/** A row's SAMPLE_ROW values: its resolved sampling, its flags and where it stands this step. */
export function sampleRow(r: ResolvedSampling, at: RowPlacement): SampleRowValues {
  let flags = 0;
  if (r.greedy) flags |= RowFlag.greedy;
  if (r.allowedTokenIds) flags |= RowFlag.allowed;
  if (at.hasGrammar) flags |= RowFlag.grammar;
  if (hasPenalties(r)) flags |= RowFlag.penalties;
  if (at.updateCounts) flags |= RowFlag.updateCounts;
  if (r.topByRank) flags |= RowFlag.topByRank;
  return {
    slot: at.slot,
    flags,
    temperature: r.temperature,
    top_p: r.topP,
    top_k: r.topK,
    min_p: r.minP,
    repetition: r.repetitionPenalty,
    frequency: r.frequencyPenalty,
    presence: r.presencePenalty,
    seed_lo: r.seedLo,
    seed_hi: r.seedHi,
    step: at.outputLen,
    num_top: r.topLogprobs,
    edit_offset: at.editOffset,
    bias_count: r.logitBias.length,
    ban_count: at.banCount,
  };
}

const rows = ro('rows', SAMPLE_ROW, '(B)');
const logits = ro('logits', 'f32', '(B, V) raw');
const grammar = ro('grammar', 'u32', "(B, W) this step's bitmasks");
const processed = ro('processed', 'f32', '(B, V)');
const rowInfo = ro('row_info', 'RowInfo', '(B)');

/** A sampler pass: the step's sizes at binding 0, the shared structs and reductions before its own WGSL. */
function samplerPass(name: string, bindings: Record<string, BindingSpec>, ...wgsl: string[]): KernelSpec {
  return { name, bindings, uniforms: SAMPLER_DIMS, shaders: { main: [commonWgsl, reduceWgsl, ...wgsl] } };
}

export const SAMPLER_PROCESS_SPEC = samplerPass(
  'sampler.process',
  {
    rows,
    edits: ro('edits', 'u32', 'bias pairs and banned ids'),
    grammar,
    logits,
    counts: ro('counts', 'u32', '(maxSeqs, V) output token counts'),
    masks: ro('masks', 'u32', '(maxSeqs, 2, W) prompt bits, allowed bits'),
    processed: rw('processed', 'f32', '(B, V)'),
    chunkStats: rw('chunk_stats', 'vec4<f32>', '(B, num_chunks): raw max, raw sum, proc max, 0'),
  },
  processWgsl,
);

export const SAMPLER_SELECT_SPEC = samplerPass(
  'sampler.select',
  {
    rows,
    logits,
    grammar,
    processed,
    chunkStats: ro('chunk_stats', 'vec4<f32>', '(B, num_chunks)'),
    rowInfo: rw('row_info', 'RowInfo', '(B)'),
    rowTop: rw('row_top', 'vec2<u32>', '(B, MAX_TOP): id, raw value bits'),
    candidates: rw('candidates', 'vec2<u32>', '(B, CANDIDATES): id, value bits'),
  },
  radixWgsl,
  selectWgsl,
);

export const SAMPLER_DRAW_SPEC = samplerPass(
  'sampler.draw',
  {
    rows,
    processed,
    rowInfo,
    drawBest: rw('draw_best', 'vec2<u32>', '(B, num_chunks): score bits, id'),
  },
  drawWgsl,
);

export const SAMPLER_FINISH_SPEC = samplerPass(
  'sampler.finish',
  {
    rows,
    logits,
    grammar,
    rowInfo,
    rowTop: ro('row_top', 'vec2<u32>', '(B, MAX_TOP)'),
    drawBest: ro('draw_best', 'vec2<u32>', '(B, num_chunks)'),
    counts: rw('counts', 'u32', '(maxSeqs, V)'),
    output: rw('output', 'u32', '(B, 4) then (B, MAX_TOP, 2)'),
  },
  finishWgsl,
);

export const PROMPT_LOGPROBS_SPEC: KernelSpec = {
  name: 'logprobs.prompt',
  bindings: {
    logits: ro('logits', 'f32', '(T, V)'),
    targets: ro('targets', 'u32', '(T): bound with exactly T words'),
    out: rw('out', 'u32', '(T, 2 + 2k)'),
  },
  // k: top entries per row, 0..MAX_TOP
  uniforms: params('V k', { var: 'pdims', struct: 'PromptDims', first: true }),
  shaders: { main: [commonWgsl, radixWgsl, logprobsWgsl] },
};
