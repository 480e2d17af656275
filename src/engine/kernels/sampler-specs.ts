/**
 * Specs (spec.ts) of the sampler's four passes (sampler.ts) and of prompt logprobs (logprobs.ts).
 * Every pass takes the step's sizes as the uniform block at binding 0 and shares the per-step
 * buffers by name; the WGSL structs SampleRow and RowInfo stay in sampler-common.wgsl (they type
 * storage arrays, not the interface).
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
import { params, ro, rw, type BindingSpec, type KernelSpec } from './spec';

/** Sizes of the current sampler step: V the row length of logits, B rows this step, num_chunks = ceil(V / CHUNK), W = ceil(V / 32). */
const SAMPLER_DIMS = params('V B num_chunks W', { var: 'dims', struct: 'SamplerDims', first: true });

const rows = ro('rows', 'SampleRow', '(B)');
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
