/**
 * StepGraphs: the recorded calls of a ModelRunner's forward passes, cached by shape and replayed.
 * Every call reads its per-step values (tokens, rows, positions, gather lists) from the step
 * buffers, so a graph encoded once serves every later step of the same shape; encoding one (hundreds
 * of bind groups and uniform blocks) costs more on an H100 than running it.
 *
 *   - decode steps (every row one token, sampled in row order): the fused decode graph
 *     (decode-graph.ts) per (B, split plan, MLP mode, LoRA), or the general graph with decode
 *     attention for models the fused kernels do not run or are not chosen for (fusedDecodeChosen: a
 *     [gate; up] of mixed dtypes; sandwich norms under the default DecodeGraphChoice) and for LoRA
 *     rows where the fused LoRA variants do not (fusedLoraFits: a device with fewer than 10 storage
 *     buffers per stage);
 *   - every other step (prefill chunks, jump-forward drafts): the general graph (forward-graph.ts)
 *     per dims. Drafts repeat a few row shapes step after step; long prompts repeat their full
 *     prefill chunks.
 *
 * Each kind is a small LRU (disposing what it drops). A graph with LoRA rows binds the adapter
 * pool's buffers, so attaching another pool clears them (ModelRunner.attachLora).
 *
 * Not here: uploading a step's rows, the sampler, submission (model-runner.ts).
 */
import type { KernelCall } from '../gpu/kernel-call';
import type { DecodeSplitPlan } from '../kernels/attention-decode';
import { lmHeadWeights } from '../model/weights/kernel-args';
import { CallCache } from '../gpu/call-cache';
import { decodeMlpMode, encodeDecode, fusedDecodeChosen, fusedLoraFits, type DecodeGraph, type DecodeGraphChoice } from './decode-graph';
import { encodeForward, type ForwardContext, type ForwardDims } from './forward-graph';

/** Decode graphs kept (fused and unfused MLP, per batch size and split plan). */
const DECODE_GRAPHS = 8;
/** General graphs kept (prefill, drafted and LoRA-decode shapes). */
const GENERAL_GRAPHS = 16;

export type DecodeGraphName = 'decode-fused' | 'decode-unfused' | 'decode-folded' | 'decode-fused-lora' | 'decode-lora' | 'decode-general';

export class StepGraphs {
  private readonly decode = new CallCache<DecodeGraph>(DECODE_GRAPHS, { callsOf: (g) => g.calls });
  private readonly general = new CallCache<{ calls: KernelCall[] }>(GENERAL_GRAPHS, { callsOf: (g) => g.calls });
  /** Whether the fused graph decodes this model (read once: the config and weights do not change). */
  private readonly fusedCovers: boolean;
  /** Whether batches with adapter rows take the fused graph (read once, like fusedCovers). */
  private readonly fusedLora: boolean;

  constructor(
    private readonly forward: Omit<ForwardContext, 'loraTables'>,
    /** Largest batch decoded with the fused MLP (split-K partials); larger ones use the GEMV pair. */
    private readonly fusedMaxBatch: number,
    /** Most keys one decode query attends to (the window when every layer slides). */
    private readonly maxAttended: number,
    choice: DecodeGraphChoice,
  ) {
    this.fusedCovers = fusedDecodeChosen(forward.weights, choice);
    this.fusedLora = fusedLoraFits(forward.weights, forward.dense, choice);
  }

  /**
   * The decode split plan for rows at their positions: planned for the longest context rounded up
   * to a power of two (at least 64), so cached graphs stay valid while contexts grow within it. When
   * every layer slides, the splits tile only the window's keys (attention-decode.ts), so the plan
   * stops growing at the window.
   */
  plan(rows: readonly { pos: number }[]): DecodeSplitPlan {
    const longest = Math.max(...rows.map((r) => r.pos + 1));
    const bucket = Math.min(this.maxAttended, Math.max(64, 2 ** Math.ceil(Math.log2(longest))));
    return this.forward.attention.decode.plan(bucket, rows.length);
  }

  /** The calls of a decode step of B rows, and which graph they are. */
  decodeStep(f: ForwardContext, B: number, plan: DecodeSplitPlan, lora: boolean): { graph: DecodeGraphName; calls: KernelCall[] } {
    if (lora && this.fusedLora) return { graph: 'decode-fused-lora', calls: this.fusedLoraDecode(f, B, plan).calls };
    if (lora || !this.fusedCovers) {
      return { graph: lora ? 'decode-lora' : 'decode-general', calls: this.generalStep(f, decodeDims(B, plan, lora)) };
    }
    const g = this.fusedDecode(B, plan);
    return { graph: `decode-${g.mlp}`, calls: g.calls };
  }

  /** The general graph for these dims. */
  generalStep(f: ForwardContext, dims: ForwardDims): KernelCall[] {
    const a = dims.attention;
    const attention = a.kind === 'prefill' ? `prefill:${a.maxCount}` : `decode:${a.plan.splitLen}:${a.plan.numSplits}`;
    const key = `${dims.T}|${dims.B}|${attention}|${dims.R}|${dims.lora}`;
    return this.general.get(key, () => ({ calls: encodeForward(f, dims) })).calls;
  }

  /**
   * The decode graph a batch of B rows at this context would use (bench figures): rows without
   * adapters, or with `lora` rows with adapters (the pool attached to f).
   */
  describeDecode(f: ForwardContext, B: number, longestContext: number, lora = false): DecodeGraph {
    const plan = this.planAt(B, longestContext);
    if (lora && this.fusedLora) return this.fusedLoraDecode(f, B, plan);
    if (!lora && this.fusedCovers) return this.fusedDecode(B, plan);
    return this.generalDecode(f, B, plan, lora);
  }

  /**
   * The general graph's decode step of B rows, even where the fused graph runs them (bench figures:
   * what the fused graph saves, on any device; the general graph is what a device with fewer than 10
   * storage buffers per stage decodes LoRA rows through).
   */
  describeGeneralDecode(f: ForwardContext, B: number, longestContext: number, lora = false): DecodeGraph {
    return this.generalDecode(f, B, this.planAt(B, longestContext), lora);
  }

  clear(): void {
    this.decode.clear();
    this.general.clear();
  }

  /** The split plan of B rows whose longest context is `longestContext`. */
  private planAt(B: number, longestContext: number): DecodeSplitPlan {
    return this.plan(Array.from({ length: B }, () => ({ pos: longestContext - 1 })));
  }

  private generalDecode(f: ForwardContext, B: number, plan: DecodeSplitPlan, lora: boolean): DecodeGraph {
    const calls = this.generalStep(f, decodeDims(B, plan, lora));
    // Per layer: the calls between the embedding and lm_head, spread evenly.
    const outside = callsOutsideLayers(f, B);
    const perLayer = (calls.length - outside) / f.weights.config.numLayers;
    return { calls, lora, B, plan, mlp: 'unfused', fusedOProj: false, dispatchesPerLayer: perLayer, dispatchesOutsideLayers: outside };
  }

  /** The fused graph with the LoRA variants: the fused MLP at every B (decode-graph.ts fusedLoraFits). */
  private fusedLoraDecode(f: ForwardContext, B: number, plan: DecodeSplitPlan): DecodeGraph {
    if (!f.loraTables) throw new Error('decode: LoRA rows without adapter tables');
    const lora = { layout: f.loraLayout, tables: f.loraTables, kernels: f.loraKernels };
    return this.decode.get(`lora|${B}|${plan.splitLen}|${plan.numSplits}`, () => encodeDecode(this.forward, B, plan, 'fused', lora));
  }

  private fusedDecode(B: number, plan: DecodeSplitPlan): DecodeGraph {
    const mlp = decodeMlpMode(this.forward.weights, B, this.fusedMaxBatch);
    return this.decode.get(`${mlp}|${B}|${plan.splitLen}|${plan.numSplits}`, () => encodeDecode(this.forward, B, plan, mlp));
  }
}

/** The general graph's dims for a decode step: every row one token, each sampled. */
function decodeDims(B: number, plan: DecodeSplitPlan, lora: boolean): ForwardDims {
  return { T: B, B, attention: { kind: 'decode', plan }, R: B, lora };
}

/** Dispatches of the general graph outside its layers: the embedding's row chunks and lm_head's calls. */
function callsOutsideLayers(f: ForwardContext, R: number): number {
  const embedding = f.weights.embedding.chunks.length;
  const head = f.dense.lmHead.encode({
    head: lmHeadWeights(f.weights),
    logits: f.step.logits,
    hidden: f.step.h,
    R,
    rows: f.step.gather,
    scratch: f.step.scratch,
  });
  for (const c of head) c.dispose();
  return embedding + head.length;
}
