/**
 * The trainer's activation memory, planned in one place (docs/style.md "For Hearth" 3, llm.c's
 * TensorSpec table with its `recompute` flag): every tensor the training forward saves or the
 * backward uses, with its shape and bytes, for a micro-batch capacity of T tokens and S sequences.
 *
 * Two modes, chosen by the memory budget:
 * - 'save': every layer keeps its activations (below) from the forward to the backward.
 * - 'recompute': a layer keeps only its input residual h; the backward re-runs that layer's
 *   forward (bit-identical kernels) into one shared set before using it. About +1/3 of the
 *   training FLOPs, activations ~ L x T x C instead of ~ L x T x (10 C + 3 F).
 * What is never saved (cheap to redo inside the layer's backward, in both modes): the normed
 * inputs x1 / x2 (an RMSNorm) and silu(gate) * up (SwiGLU), the logits (the head recomputes them
 * chunk by chunk).
 *
 * Per layer: h [T, C] input residual; rstd1 [T]; qkv [T, (NH + 2 NKV) HS] (bias and LoRA added,
 * before q/k-norm and RoPE: what Qwen3's q/k-norm backward needs; scratch for the others); q [T, NH HS] after RoPE; k, v
 * the layer's KV blocks [blocks, NKV, 16, HS] (after norm and RoPE, as the attention reads them);
 * att [T, NH HS]; lse [2, T, NH] (attention logsumexp, then the backward's row sums); hMid [T, C] residual after attention; rstd2;
 * gu [T, 2F] fused gate | up; the LoRA shrinks u = x A^T of each adapted group [T, n r]; with Gemma's
 * sandwich norms also oOut / downOut [T, C], the o_proj and down_proj outputs before their norms, and
 * their rstdO / rstdD [T].
 * Scratch (one of each, reused by every layer and the head): see `planActivations`.
 *
 * Every tensor is its own GPU buffer: a dispatch may not bind one buffer both writable and
 * read-only, and the kernels of a layer read some of its tensors while writing others.
 * Not here: the LoRA parameters (lora-plan.ts), the base weights (model/weights/weight-set.ts).
 */
import { KV_BLOCK } from '../kernels/kv-layout';
import type { ModelConfig } from '../model/config/model-config';
import { GradNorm } from '../kernels/grad-norm';
import { LORA_GROUPS, type LoraGroupName, type LoraPlan } from './lora-plan';

export type ActivationMode = 'save' | 'recompute';

export interface TensorSpec {
  name: string;
  shape: number[];
  dtype: 'f32' | 'u32';
  bytes: number;
}

export type LayerTensor =
  | 'rstd1'
  | 'qkv'
  | 'q'
  | 'k'
  | 'v'
  | 'att'
  | 'lse'
  | 'hMid'
  | 'rstd2'
  | 'gu'
  | 'oOut'
  | 'rstdO'
  | 'downOut'
  | 'rstdD'
  | 'u.qkv'
  | 'u.o'
  | 'u.gateUp'
  | 'u.down';

export type ScratchTensor =
  | 'qkv'
  | 'dBranch'
  | 'x'
  | 'act'
  | 'hFinal'
  | 'xFinal'
  | 'rstdFinal'
  | 'dh'
  | 'dx'
  | 'dAct'
  | 'dGu'
  | 'dAtt'
  | 'dQkv'
  | 'gB'
  | 'logits'
  | 'tokens'
  | 'targets'
  | 'coef'
  | 'stats'
  | 'rows'
  | 'blockTable'
  | 'loraPart'
  | 'normPart'
  | 'normStats';

export interface ActivationPlan {
  mode: ActivationMode;
  /** Tokens per micro-batch (T) and sequences per micro-batch (S). */
  tokens: number;
  sequences: number;
  /** Rows of logits computed at once by the head. */
  headRows: number;
  /** KV blocks of one layer: every sequence's tokens, each sequence starting on a new block. */
  kvBlocks: number;
  maxBlocksPerSeq: number;
  /** The per-layer input residual h (always one per layer). */
  residual: TensorSpec;
  /** Tensors kept per layer in 'save' mode, or held once and recomputed per layer in 'recompute'. */
  layer: TensorSpec[];
  /** Reused by every layer. */
  scratch: TensorSpec[];
  /** Bytes of the layer tensors times the layers that hold them, the residuals and the scratch. */
  totalBytes: number;
}

const f32 = (name: string, shape: number[]): TensorSpec => ({ name, shape, dtype: 'f32', bytes: 4 * shape.reduce((a, b) => a * b, 1) });
const u32 = (name: string, shape: number[]): TensorSpec => ({ ...f32(name, shape), dtype: 'u32' });

/**
 * Largest logits chunk: rows x V floats within this many bytes (and the binding limit). Larger
 * chunks give the head's dX GEMM (K = V, one 64 x 64 tile per 64 rows x 64 channels) more
 * workgroups: SmolLM2-135M gets 1365 rows per chunk (198 workgroups) instead of 341 (54).
 */
const LOGITS_CHUNK_BYTES = 256 << 20;

export interface PlanOptions {
  /** Micro-batch capacity in tokens (the longest sequence the session trains on). */
  tokens: number;
  /** Sequences per micro-batch. */
  sequences: number;
  /** 'auto': save when it fits `budgetBytes`, else recompute. */
  mode: ActivationMode | 'auto';
  budgetBytes: number;
  /** The device's binding limit: no tensor may be larger. */
  maxBindingBytes: number;
}

/** LoRA split-K scratch for the largest layer group (lora-grad.ts sizes it per problem set). */
export type LoraPartFloats = (group: LoraGroupName, T: number) => number;

export function planActivations(cfg: ModelConfig, lora: LoraPlan, opts: PlanOptions, loraPartFloats: LoraPartFloats): ActivationPlan {
  const T = opts.tokens;
  const S = opts.sequences;
  const C = cfg.hiddenSize;
  const NQ = cfg.numHeads * cfg.headDim;
  const KVW = cfg.numKvHeads * cfg.headDim;
  const QKV = NQ + 2 * KVW;
  const F = cfg.intermediateSize;
  const V = cfg.vocabSize;
  const maxBlocksPerSeq = Math.ceil(T / KV_BLOCK);
  const kvBlocks = maxBlocksPerSeq + S;
  const groupRows = (g: LoraGroupName) => Math.max(0, ...lora.layers.map((l) => l[g]?.rows ?? 0));

  // The projection before q/k-norm and RoPE is read back only by Qwen3's q/k-norm backward; other
  // models need it just between the QKV GEMM and qkv-prep, so it is scratch for them.
  const qkv = f32('qkv', [T, QKV]);
  const layer: TensorSpec[] = [
    f32('rstd1', [T]),
    ...(cfg.qkNorm ? [qkv] : []),
    f32('q', [T, NQ]),
    f32('k', [kvBlocks, cfg.numKvHeads, KV_BLOCK, cfg.headDim]),
    f32('v', [kvBlocks, cfg.numKvHeads, KV_BLOCK, cfg.headDim]),
    f32('att', [T, NQ]),
    // The forward's logsumexp, then the attention backward's D = rowsum(dO * O) (AttentionBackward's stats).
    f32('lse', [2, T, cfg.numHeads]),
    f32('hMid', [T, C]),
    f32('rstd2', [T]),
    f32('gu', [T, 2 * F]),
    ...(cfg.sandwichNorms ? [f32('oOut', [T, C]), f32('rstdO', [T]), f32('downOut', [T, C]), f32('rstdD', [T])] : []),
  ];
  for (const g of LORA_GROUPS) if (groupRows(g) > 0) layer.push(f32(`u.${g}`, [T, groupRows(g)]));

  const headRows = Math.max(1, Math.min(T, Math.floor(Math.min(LOGITS_CHUNK_BYTES, opts.maxBindingBytes) / (4 * V))));
  const loraPart = Math.max(4, ...LORA_GROUPS.map((g) => loraPartFloats(g, T)));
  const scratch: TensorSpec[] = [
    ...(cfg.qkNorm ? [] : [qkv]),
    f32('x', [T, C]),
    f32('act', [T, F]),
    f32('hFinal', [T, C]),
    f32('xFinal', [T, C]),
    f32('rstdFinal', [T]),
    f32('dh', [T, C]),
    // Gemma: the gradient of a sandwich-normed branch output (o_proj or down_proj, before its norm).
    ...(cfg.sandwichNorms ? [f32('dBranch', [T, C])] : []),
    f32('dx', [T, C]),
    f32('dAct', [T, F]),
    f32('dGu', [T, 2 * F]),
    f32('dAtt', [T, NQ]),
    f32('dQkv', [T, QKV]),
    f32('gB', [T, Math.max(1, lora.maxGroupRows)]),
    f32('logits', [headRows, V]),
    u32('tokens', [T]),
    u32('targets', [T]),
    f32('coef', [T]),
    f32('stats', [2, T]),
    u32('rows', [S, 4]),
    u32('blockTable', [S, maxBlocksPerSeq]),
    f32('loraPart', [loraPart]),
    f32('normPart', [GradNorm.partsFor(Math.max(1, lora.elements))]),
    f32('normStats', [4]),
  ];
  const residual = f32('h', [T, C]);
  const layerBytes = layer.reduce((s, t) => s + t.bytes, 0);
  const scratchBytes = scratch.reduce((s, t) => s + t.bytes, 0);
  const bytesOf = (mode: ActivationMode) =>
    cfg.numLayers * residual.bytes + (mode === 'save' ? cfg.numLayers : 1) * layerBytes + scratchBytes;
  const mode: ActivationMode = opts.mode !== 'auto' ? opts.mode : bytesOf('save') <= opts.budgetBytes ? 'save' : 'recompute';
  for (const t of [residual, ...layer, ...scratch]) {
    if (t.bytes > opts.maxBindingBytes) {
      throw new Error(
        `training memory plan: ${t.name} [${t.shape.join(', ')}] is ${t.bytes} bytes, more than one binding allows (${opts.maxBindingBytes}); use fewer tokens per micro-batch`,
      );
    }
  }
  return { mode, tokens: T, sequences: S, headRows, kvBlocks, maxBlocksPerSeq, residual, layer, scratch, totalBytes: bytesOf(mode) };
}

/** One line per tensor and the totals, for the log (and the bench). */
export function describePlan(plan: ActivationPlan, numLayers: number): string {
  const mib = (b: number) => `${(b / 2 ** 20).toFixed(1)} MiB`;
  const rows = [
    `training activations: mode ${plan.mode}, ${plan.tokens} tokens x ${plan.sequences} sequences per micro-batch, ${mib(plan.totalBytes)} in all`,
    `  per layer (x ${numLayers}): h [${plan.residual.shape.join(', ')}] ${mib(plan.residual.bytes)}`,
    ...plan.layer.map(
      (t) =>
        `  ${plan.mode === 'save' ? `per layer (x ${numLayers})` : 'recomputed, once'}: ${t.name} [${t.shape.join(', ')}] ${mib(t.bytes)}`,
    ),
    ...plan.scratch.map((t) => `  scratch: ${t.name} [${t.shape.join(', ')}] ${mib(t.bytes)}`),
  ];
  return rows.join('\n');
}
