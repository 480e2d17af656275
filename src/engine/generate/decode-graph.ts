/**
 * The fused decode graph (docs/engine.md "Decode step"): B sequences, one token each, through the
 * fused decode kernels, ending in logits [B, V] for the sampler. No activation leaves the
 * DecodeStream except q, the attention partials and (unfused MLP) the SwiGLU output.
 *
 * Per layer, by batch size (`mlp`):
 *   fused   (B <= fusedMaxBatch): DecodeQkv(pending) -> DecodeAttention -> DecodeOProj(pending)
 *           -> DecodeMlp (split-K partials, folded by the next consumer): 4 dispatches (DecodeQkv
 *           is one per row segment of a qkv whose parts differ in dtype: 5 or 6 then)
 *   unfused (larger B): DecodeQkv -> DecodeAttention -> DecodeOProj -> Gemv(post-norm folded,
 *           swiglu) -> Gemv(down, += residual): 5 dispatches, no partials to reread (at large B
 *           every consumer workgroup rereading P partial rows would dominate).
 *   sandwich norms (Gemma 3, split-K MLP only): the same 4 kernels, the residual ping-ponging between
 *           the stream's block 0 and `mid` (decode-stream.ts): DecodeQkv(mid + norm(partials) -> block
 *           0) -> DecodeAttention -> DecodeOProj(-> branch) -> DecodeMlp(block 0 + norm(branch) -> mid).
 *   folded  (sandwich norms, larger B): DecodeFinalize(mid + norm(partials) -> block 0, a workgroup
 *           per row) -> DecodeQkv(nothing pending) -> DecodeAttention -> DecodeOProj -> DecodeMlp: 5.
 *   LoRA rows (decode-lora.ts): DecodeLora(fold, shrink q|k|v) -> DecodeQkv(+LoRA) -> DecodeAttention
 *           -> DecodeLora(shrink o) -> DecodeOProj(+LoRA) -> DecodeLora(shrink gate|up) ->
 *           DecodeMlp(+LoRA, down-shrink partials): 7, the split-K MLP at every B.
 * When DecodeOProj's merge buffer cannot hold B x NH x numSplits (long contexts), o_proj becomes
 * [DecodeFinalize when partials are pending] + AttentionMerge + Gemv(+= residual).
 * After the last layer: DecodeFinalize (split-K MLP; DecodeLora's fold with LoRA), then lm_head with the
 * final norm folded.
 * Gemma's scaled embedding is the embedding kernel's `scale`; its local RoPE table is DecodeQkv's.
 *
 * The calls of a (B, split plan) pair are encoded once and replayed each step while they hold
 * (kernel-call.ts); StepGraphs (step-graphs.ts) keeps the last few in a CallCache (gpu/call-cache.ts,
 * LRU, disposing what it drops). LoRA rows on a device with 8 storage buffers per stage use
 * forward-graph.ts instead.
 * Not here: the sampler, the submission (model-runner.ts).
 */
import { layerWindow } from '../model/config/attention-window';
import type { KernelCall } from '../gpu/kernel-call';
import type { DecodeSplitPlan } from '../kernels/attention-decode';
import type { AttentionKernels, DenseKernels } from '../kernels/registry';
import type { DecodeLoraMode, DecodeLoraRefs } from '../kernels/decode-lora';
import type { LoraKernels, LoraLayout, LoraTables } from '../kernels/lora';
import { mlpSlices } from '../kernels/decode-mlp';
import { decodeLayerArgs, decodeQkvArgs, decodeShapeOf, lmHeadWeights } from '../model/weights/kernel-args';
import type { KvCache } from '../model/kv/kv-cache';
import { embeddingScaleOf } from '../model/weights/vector-values';
import type { WeightSet } from '../model/weights/weight-set';
import type { StepBuffers } from './step-buffers';

/**
 * fused: DecodeMlp's split-K partials, folded by the next layer's consumers; unfused: the GEMV pair;
 * folded: DecodeMlp's partials folded by one dispatch per row before the next layer (DecodeFinalize),
 * so nothing is reread by every consumer workgroup: sandwich norms above fusedMaxBatch, where the
 * GEMV pair has no step that normalises the MLP output as a whole row.
 */
export type DecodeMlpMode = 'fused' | 'unfused' | 'folded';

export interface DecodeGraphContext {
  weights: WeightSet;
  kv: KvCache;
  dense: DenseKernels;
  attention: AttentionKernels;
  step: StepBuffers;
}

/** A decode step with adapter rows: the pool the LoRA terms read (docs/engine.md "LoRA in the fused decode step"). */
export interface DecodeLoraContext {
  layout: LoraLayout;
  tables: Omit<LoraTables, 'tokenSlots'>;
  /** The general graph's batched LoRA: o_proj's when it runs as AttentionMerge + Gemv. */
  kernels: LoraKernels;
}

export interface DecodeGraph {
  calls: KernelCall[];
  /** Whether the LoRA variants run (rows with adapters). */
  lora: boolean;
  B: number;
  plan: DecodeSplitPlan;
  mlp: DecodeMlpMode;
  /** Whether o_proj merges in its prologue (else AttentionMerge + Gemv). */
  fusedOProj: boolean;
  /** Dispatches recorded per layer and outside the layers (device-independent figures). */
  dispatchesPerLayer: number;
  dispatchesOutsideLayers: number;
}

/**
 * Whether the fused decode kernels run this model. They fold the norms and the gated activation into
 * their GEMVs, Gemma 3's too (sandwich norms, GeGLU, scaled embeddings, the local RoPE table); a model
 * with a [gate; up] whose parts differ in dtype decodes through the general graph instead
 * (forward-graph.ts): DecodeMlp and the SwiGLU GEMV read gate row f and up row F + f together from one
 * binding (llama.cpp's own mixes never split them, only hand-made ones do). A qkv whose parts differ
 * (Q4_K_M's Q6_K attn_v) is fine: DecodeQkv runs once per row segment.
 */
export function fusedDecodeCovers(weights: WeightSet): boolean {
  return weights.layers.every((w) => !w.gateUp.mixed);
}

/**
 * Which graph decodes a model: 'fused' wherever the fused kernels run it, 'general' always, 'auto'
 * (the default) fused except for sandwich norms (Gemma 3). On the H200 (docs/performance.md "An H200
 * beside the peers") Gemma's fused step, 4 dispatches per layer, decoded 186 / 97 tokens/s at batch 1
 * on the 270M / 1B shapes against 315 / 183 through the general graph's 13 on an H100: its DecodeQkv
 * folds the MLP partials with a norm pass over them in every workgroup, and its DecodeMlp runs on
 * F / 128 workgroups. 'fused' keeps it measurable (the bench's --decode-graph).
 */
export type DecodeGraphChoice = 'auto' | 'fused' | 'general';

/** Whether decode steps take the fused graph for this model under `choice`. */
export function fusedDecodeChosen(weights: WeightSet, choice: DecodeGraphChoice): boolean {
  if (choice === 'general' || (choice === 'auto' && weights.config.sandwichNorms)) return false;
  return fusedDecodeCovers(weights);
}

/**
 * The MLP mode of a B-row decode step: the split-K MLP up to fusedMaxBatch; above it the GEMV pair, or
 * with sandwich norms (whose consumers normalise the partials' sum as a whole row, which the GEMV
 * pair has no step for) the split-K MLP with its partials folded once per layer.
 */
export function decodeMlpMode(weights: WeightSet, B: number, fusedMaxBatch: number): DecodeMlpMode {
  if (B <= fusedMaxBatch) return 'fused';
  return weights.config.sandwichNorms ? 'folded' : 'unfused';
}

/**
 * Whether batches with adapter rows decode through the fused graph: a model the fused kernels run, on
 * a device that binds DecodeQkv's LoRA variant (10 storage buffers). Such batches always take the
 * split-K MLP: DecodeLora's fold leaves nothing for DecodeQkv to re-read, which is what the unfused
 * pair avoids at large B.
 */
export function fusedLoraFits(weights: WeightSet, dense: DenseKernels, choice: DecodeGraphChoice): boolean {
  return fusedDecodeChosen(weights, choice) && dense.decodeQkv.loraFits();
}

/**
 * Encodes the decode step of B rows (tokens in step.tokens, rows in step.rows; with `lora`, each row's
 * adapter slot in step.tokenSlots).
 */
export function encodeDecode(
  g: DecodeGraphContext,
  B: number,
  plan: DecodeSplitPlan,
  mlp: DecodeMlpMode,
  lora: DecodeLoraContext | null = null,
): DecodeGraph {
  const { weights, kv, dense, attention, step } = g;
  const cfg = weights.config;
  if (!fusedDecodeCovers(weights))
    throw new Error(`decode: the fused decode kernels do not run this ${cfg.arch} model; use the general graph`);
  const sandwich = !!cfg.sandwichNorms;
  if (sandwich && mlp === 'unfused') throw new Error('decode: sandwich norms run with the split-K MLP (fused or folded)');
  const { numHeads: NH, headDim: HS, rmsNormEps: eps } = cfg;
  const stream = step.stream;
  if (B > stream.rows) throw new Error(`decode: ${B} rows exceed the stream's ${stream.rows}`);
  if (lora && mlp !== 'fused') throw new Error('decode: LoRA rows run the fused MLP (DecodeLora folds its partials)');
  // DecodeFinalize's sandwich variant after layer l: block 0 = mid + rmsnorm(partials) * its post-MLP norm.
  const sandwichOf = (l: number) => {
    const norm = weights.layers[l].mlpOutNorm;
    return sandwich && norm !== null ? { vectors: weights.vectors, norm, eps } : undefined;
  };
  const loraRefs: DecodeLoraRefs | null = lora && { layout: lora.layout, pool: lora.tables.pool, rows: step.loraRows };
  // DecodeLora's call of one mode: the fold and the shrinks the LoRA variants' expand terms read.
  const shrink = (mode: DecodeLoraMode, layer: number, normOffset: number, pending: number, branchNorm: number | null = null) =>
    dense.decodeLora.encode({
      ...loraRefs!,
      mode,
      slots: lora!.tables.slots,
      tokenSlots: step.tokenSlots,
      layer,
      stream,
      vectors: weights.vectors,
      normOffset,
      branchNorm,
      eps,
      pending,
      attention: step.partials,
      NH,
      HS,
      numSplits: plan.numSplits,
      B,
    });
  const slice = step.limits.mlpSlice;
  const P = mlpSlices(cfg.intermediateSize, slice).P;
  const fusedOProj = dense.decodeOProj.fits(decodeShapeOf(cfg), B, plan.numSplits);
  const calls: KernelCall[] = [];
  const outside: KernelCall[] = [];
  const scale = embeddingScaleOf(cfg);
  outside.push(...dense.embedding.encode({ out: stream.buffer, tokens: step.tokens, embedding: weights.embedding, T: B, scale }));
  calls.push(...outside);
  let perLayer = 0;
  for (let l = 0; l < cfg.numLayers; l++) {
    const w = weights.layers[l];
    const before = calls.length;
    // With LoRA, DecodeLora folds the previous layer's partials (and its LoRA down term) first.
    if (lora) calls.push(...shrink('qkv', l, w.inputNorm, l > 0 ? P : 0, l > 0 ? weights.layers[l - 1].mlpOutNorm : null));
    // Folded: the previous layer's partials go into the residual first (with sandwich norms: block 0
    // = mid + their normalised sum), so the layer's kernels find nothing pending.
    if (mlp === 'folded' && l > 0) calls.push(...dense.decodeFinalize.encode({ stream, B, pending: P, sandwich: sandwichOf(l - 1) }));
    const pending = mlp === 'fused' && l > 0 && !lora ? P : 0;
    // With sandwich norms the partials stay pending until the next DecodeQkv normalises their sum.
    const oPending = sandwich ? 0 : pending;
    const layerLora = loraRefs ? { ...loraRefs, layer: l } : undefined;
    calls.push(
      ...dense.decodeQkv.encode({
        ...decodeQkvArgs(weights, l),
        lora: layerLora,
        stream,
        pending,
        pendingNorm: l > 0 ? weights.layers[l - 1].mlpOutNorm : null,
        rows: step.rows,
        blockTable: kv.tableOf(l),
        maxBlocksPerSeq: kv.maxBlocksPerSeq,
        k: kv.k[l],
        v: kv.v[l],
        q: step.q,
        B,
      }),
      ...attention.decode.encode({
        partials: step.partials,
        q: step.q,
        k: kv.k[l],
        v: kv.v[l],
        blockTable: kv.tableOf(l),
        rows: step.rows,
        B,
        maxBlocksPerSeq: kv.maxBlocksPerSeq,
        plan,
        window: layerWindow(cfg, l),
      }),
    );
    if (fusedOProj) {
      if (lora) calls.push(...shrink('o', l, 0, 0));
      calls.push(
        ...dense.decodeOProj.encode({
          ...decodeLayerArgs(weights, l),
          lora: layerLora,
          stream,
          pending: oPending,
          partials: step.partials,
          numSplits: plan.numSplits,
          B,
        }),
      );
    } else {
      if (oPending > 0) calls.push(...dense.decodeFinalize.encode({ stream, B, pending }));
      calls.push(...attention.merge.encode({ out: step.att, partials: step.partials, B, NH, HS, numSplits: plan.numSplits }));
      calls.push(
        ...dense.gemv.encode({
          out: stream.buffer,
          // Sandwich norms: o_proj's output goes to the branch block, for DecodeMlp to normalise.
          yOffset: sandwich ? stream.branchBlock * stream.rows * stream.C : 0,
          x: step.att,
          weight: w.o,
          B,
          vectors: weights.vectors,
          bias: w.oBias,
          accumulate: !sandwich,
        }),
      );
      if (lora) {
        calls.push(
          ...lora.kernels.encode({
            ...lora.tables,
            tokenSlots: step.tokenSlots,
            layout: lora.layout,
            group: 'o',
            layer: l,
            u: step.loraU,
            x: step.att,
            // Into the residual, or with sandwich norms into the branch block before its norm.
            y: stream.buffer,
            yOffset: sandwich ? stream.branchBlock * stream.rows * stream.C : 0,
            T: B,
          }),
        );
      }
    }
    if (mlp !== 'unfused') {
      if (lora) calls.push(...shrink('gateUp', l, w.postNorm, 0, w.attnOutNorm));
      calls.push(...dense.decodeMlp.encode({ ...decodeLayerArgs(weights, l), lora: layerLora, stream, B, slice }));
    } else {
      calls.push(
        ...dense.gemv.encode({
          out: step.act,
          x: stream.buffer,
          weight: w.gateUp,
          B,
          vectors: weights.vectors,
          bias: w.gateUpBias,
          norm: { offset: w.postNorm, eps },
          swiglu: true,
        }),
        ...dense.gemv.encode({
          out: stream.buffer,
          x: step.act,
          weight: w.down,
          B,
          vectors: weights.vectors,
          bias: w.downBias,
          accumulate: true,
        }),
      );
    }
    perLayer = calls.length - before;
  }
  const tail: KernelCall[] = [];
  if (lora) {
    tail.push(...shrink('fold', cfg.numLayers - 1, 0, P, weights.layers[cfg.numLayers - 1].mlpOutNorm));
  } else if (mlp !== 'unfused') {
    tail.push(...dense.decodeFinalize.encode({ stream, B, pending: P, sandwich: sandwichOf(cfg.numLayers - 1) }));
  }
  tail.push(...dense.lmHead.encode({ head: lmHeadWeights(weights), stream, B, logits: step.logits }));
  calls.push(...tail);
  return {
    calls,
    lora: lora !== null,
    B,
    plan,
    mlp,
    fusedOProj,
    dispatchesPerLayer: perLayer,
    dispatchesOutsideLayers: outside.length + tail.length,
  };
}
