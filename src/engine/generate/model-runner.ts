/**
 * ModelRunner: one model's forward steps on the GPU, each recorded into one command encoder and
 * submitted once, with only the sampled tokens (and requested logprobs) read back.
 *
 * A step is a batch of rows, each a sequence's block-table row, its first position and its tokens.
 * Its forward pass is a graph StepGraphs (step-graphs.ts) keeps per shape and replays: the fused
 * decode graph when every row is one token, LoRA rows too (or the general graph with decode
 * attention for models the fused kernels do not cover, and LoRA rows on a device with 8 storage
 * buffers per stage), the general graph with prefill attention
 * otherwise (prefill chunks, jump-forward drafts).
 * Then, in the same pass, optional prompt logprobs (lm_head over the asked rows + PromptLogprobs)
 * and the sampler over the logits of each sampled row's last token (a row can be sampled several
 * times: the `n` choices of a prompt fork from its last logits; a jump-forward draft samples every
 * position of its row, `SampleRequest.at`). Block copies (copy-on-write of a
 * shared partial block) are recorded before or after the pass. The output bytes of the sampler
 * (16 per row, 176 with top logprobs) and of prompt logprobs are copied into one staging buffer.
 *
 * Not here: which sequences run (scheduler.ts), which blocks they own (model/kv/block-manager.ts), the
 * step's types (step-spec.ts), the staging buffers and the wait for the readback (step-readback.ts).
 */
import { modelWindow } from '../model/config/attention-window';
import type { KernelContext } from '../gpu/context';
import { recordCalls, type KernelCall } from '../gpu/kernel-call';
import { decodePromptLogprobs, promptLogprobsStride, type PromptLogprobs } from '../kernels/logprobs';
import type { LoraKernels, LoraLayout } from '../kernels/lora';
import { createAttentionKernels, createGenerationKernels, type AttentionKernels, type DenseKernels } from '../kernels/registry';
import { SAMPLER_RECORD_BYTES, type Sampler } from '../kernels/sampler';
import type { KvCache } from '../model/kv/kv-cache';
import { KV_BLOCK, NO_ADAPTER, packBatchRows } from '../kernels/kv-layout';
import { attentionShapeOf } from '../model/weights/kernel-args';
import type { WeightSet } from '../model/weights/weight-set';
import type { DecodeGraph } from './decode-graph';
import { encodePromptLogits, type ForwardContext } from './forward-graph';
import { loraLayout } from './lora-layout';
import type { LoraPool } from './lora-pool';
import { MAX_TOP_LOGPROBS } from '../sampling/logprobs';
import { DEFAULT_MLP_SLICE } from '../kernels/decode-mlp';
import { StepBuffers, type StepLimits } from './step-buffers';
import { StagingPool, type SubmittedStep } from './step-readback';
import type { RunnerOptions, StepResult, StepSpec } from './step-spec';
import { StepGraphs } from './step-graphs';

/** The uploaded rows of a step: batch size, token count, and each row's last token index. */
interface StepBatch {
  B: number;
  T: number;
  /** Every row one token. */
  decode: boolean;
  hasLora: boolean;
  lastToken: number[];
}

export class ModelRunner {
  readonly attention: AttentionKernels;
  readonly sampler: Sampler;
  readonly promptLogprobs: PromptLogprobs;
  readonly step: StepBuffers;
  readonly loraKernels: LoraKernels;
  readonly loraLayout: LoraLayout;
  readonly maxContext: number;
  private readonly dense: DenseKernels;
  private readonly graphs: StepGraphs;
  private readonly staging: StagingPool;
  private lora: LoraPool | null = null;
  /** The figures of the last step (graph, dispatches, rows, bytes read back): the bench reads them. */
  lastStep: { graph: StepResult['graph']; dispatches: number; rows: number; readbackBytes: number } | null = null;

  constructor(
    readonly ctx: KernelContext,
    readonly weights: WeightSet,
    readonly kv: KvCache,
    opts: RunnerOptions,
  ) {
    const cfg = weights.config;
    this.dense = opts.dense;
    this.staging = new StagingPool(ctx.device);
    this.attention = createAttentionKernels(ctx, attentionShapeOf(cfg));
    const maxBatch = Math.min(opts.maxBatch ?? kv.maxSeqs, kv.maxSeqs);
    this.maxContext = kv.maxBlocksPerSeq * KV_BLOCK;
    // Most keys one decode query attends to: the window when every layer slides (a hybrid model's
    // full-attention layers see the whole context).
    const window = modelWindow(cfg);
    const maxAttended = window > 0 ? Math.min(window, this.maxContext) : this.maxContext;
    const limits: StepLimits = {
      maxTokens: Math.max(opts.maxTokens ?? 512, maxBatch),
      maxBatch,
      promptLogitRows: Math.max(
        1,
        Math.min(opts.maxTokens ?? 512, Math.floor((opts.promptLogitsBytes ?? 64 * 2 ** 20) / (cfg.vocabSize * 4))),
      ),
      partialsFloats: this.attention.decode.partialsFloats(maxBatch, maxAttended),
      mlpSlice: opts.mlpSlice ?? DEFAULT_MLP_SLICE,
    };
    this.step = new StepBuffers(ctx.device, cfg, limits);
    const generation = createGenerationKernels(ctx, {
      maxSeqs: kv.maxSeqs,
      maxBatch,
      vocabSize: cfg.vocabSize,
      workgroupSize: opts.samplerWorkgroupSize,
    });
    this.sampler = generation.sampler;
    this.promptLogprobs = generation.promptLogprobs;
    this.loraKernels = generation.lora;
    this.loraLayout = loraLayout(cfg);
    const forward = {
      weights,
      kv,
      dense: this.dense,
      attention: this.attention,
      loraKernels: this.loraKernels,
      loraLayout: this.loraLayout,
      step: this.step,
    };
    this.graphs = new StepGraphs(forward, opts.fusedMaxBatch ?? 4, maxAttended, opts.decodeGraph ?? 'auto');
  }

  get limits(): StepLimits {
    return this.step.limits;
  }

  /** Adapters the LoRA rows name (set once the model serves adapters). */
  attachLora(pool: LoraPool): void {
    if (this.lora === pool) return;
    // Cached graphs with LoRA rows bind the pool's buffers.
    this.graphs.clear();
    this.lora = pool;
  }

  /** GPU bytes of the runner's own buffers (activations, sampler state; not weights or cache). */
  get bytes(): number {
    return this.step.bytes;
  }

  /**
   * Records, submits and reads back one step. Everything up to the submission runs synchronously
   * in the call, so a caller may start the next step before awaiting this one (pipelining).
   * The phases, in order: upload the rows, choose the graph, add prompt logprobs, prepare the
   * sampler, record and submit one encoder, then read the outputs back.
   */
  async run(spec: StepSpec): Promise<StepResult> {
    const batch = this.uploadRows(spec);
    const forward = this.forwardContext();
    const { graph, replay } = this.chooseGraph(spec, batch, forward);
    // Calls of this step alone (prompt-logprob rows), disposed once submitted.
    const fresh: KernelCall[] = [];
    const promptRows = this.preparePromptLogprobs(spec, batch, forward, fresh);
    if (spec.samples.length > 0) this.sampler.prepare(spec.samples);
    const submitted = this.recordAndSubmit(spec, batch, graph, replay, fresh, promptRows);
    for (const c of fresh) c.dispose();
    const { sampled, promptLogprobs } = await this.readBack(submitted, spec, promptRows);
    const { dispatches, readbackBytes } = submitted;
    this.lastStep = { graph, dispatches, rows: batch.B, readbackBytes };
    return { sampled, promptLogprobs, graph, dispatches, readbackBytes };
  }

  /** Checks the step against the limits and writes its token ids, row table and token slots. */
  private uploadRows(spec: StepSpec): StepBatch {
    const { rows, samples } = spec;
    const device = this.ctx.device;
    const B = rows.length;
    if (B === 0) throw new Error('ModelRunner: a step needs at least one row');
    if (B > this.limits.maxBatch) throw new Error(`ModelRunner: ${B} rows exceed the batch limit ${this.limits.maxBatch}`);
    if (samples.length > this.limits.maxBatch)
      throw new Error(`ModelRunner: ${samples.length} sampled rows exceed ${this.limits.maxBatch}`);
    const tokens: number[] = [];
    const tokenSlots: number[] = [];
    const lastToken: number[] = [];
    for (const r of rows) {
      if (r.tokens.length === 0) throw new Error('ModelRunner: a row with no tokens');
      if (r.pos + r.tokens.length > this.maxContext)
        throw new Error(`ModelRunner: position ${r.pos + r.tokens.length - 1} beyond the cache's ${this.maxContext}`);
      for (const t of r.tokens) {
        tokens.push(t);
        tokenSlots.push(r.adapterSlot);
      }
      lastToken.push(tokens.length - 1);
    }
    const T = tokens.length;
    const hasLora = rows.some((r) => r.adapterSlot !== NO_ADAPTER);
    if (hasLora && !this.lora) throw new Error('ModelRunner: LoRA rows but no adapter pool attached');
    device.queue.writeBuffer(this.step.tokens, 0, Uint32Array.from(tokens));
    device.queue.writeBuffer(
      this.step.rows,
      0,
      packBatchRows(rows.map((r) => ({ seq: r.seq, pos: r.pos, adapter: r.adapterSlot, count: r.tokens.length }))),
    );
    if (hasLora) device.queue.writeBuffer(this.step.tokenSlots, 0, Uint32Array.from(tokenSlots));
    return { B, T, decode: T === B, hasLora, lastToken };
  }

  private forwardContext(): ForwardContext {
    return {
      weights: this.weights,
      kv: this.kv,
      dense: this.dense,
      attention: this.attention,
      loraKernels: this.loraKernels,
      loraLayout: this.loraLayout,
      loraTables: this.lora ? { pool: this.lora.pool, slots: this.lora.slots } : null,
      step: this.step,
    };
  }

  /**
   * The forward pass of the step, a cached graph to replay (StepGraphs): a decode graph when every
   * row is one token sampled in row order and no prompt logprobs are asked, else the general graph
   * with the sampled rows' logits gathered in sampler order.
   */
  private chooseGraph(spec: StepSpec, batch: StepBatch, forward: ForwardContext): { graph: StepResult['graph']; replay: KernelCall[] } {
    const { rows, samples } = spec;
    const { B, T, decode, hasLora, lastToken } = batch;
    const device = this.ctx.device;
    const fusedOrder = samples.length === B && samples.every((s, i) => s.row === i && (s.at ?? 0) === 0);
    if (decode && fusedOrder && !spec.promptLogprobs) {
      const { graph, calls } = this.graphs.decodeStep(forward, B, this.graphs.plan(rows), hasLora);
      // The general graph's lm_head reads the batch rows in order (prefill steps overwrite the gather list).
      if (graph === 'decode-lora' || graph === 'decode-general') {
        device.queue.writeBuffer(
          this.step.gather,
          0,
          Uint32Array.from({ length: B }, (_, i) => i),
        );
      }
      return { graph, replay: calls };
    }
    if (samples.length > 0) {
      const gather = samples.map((s) => {
        const count = rows[s.row].tokens.length;
        const at = s.at ?? count - 1;
        if (!Number.isInteger(at) || at < 0 || at >= count) throw new Error(`ModelRunner: sample at token ${at} of a ${count}-token row`);
        return lastToken[s.row] - (count - 1) + at;
      });
      device.queue.writeBuffer(this.step.gather, 0, Uint32Array.from(gather));
    }
    const attention =
      decode && !spec.promptLogprobs
        ? { kind: 'decode' as const, plan: this.graphs.plan(rows) }
        : { kind: 'prefill' as const, maxCount: Math.max(...rows.map((r) => r.tokens.length)) };
    const graph = decode && hasLora ? 'decode-lora' : 'prefill';
    return { graph, replay: this.graphs.generalStep(forward, { T, B, attention, R: samples.length, lora: hasLora }) };
  }

  /** Gathers the asked prompt positions' hidden states and encodes their lm_head; returns the row count (0: none asked). */
  private preparePromptLogprobs(spec: StepSpec, batch: StepBatch, forward: ForwardContext, fresh: KernelCall[]): number {
    const pl = spec.promptLogprobs;
    if (!pl) return 0;
    const device = this.ctx.device;
    const promptRows = pl.targets.length;
    if (promptRows < 1 || promptRows > this.limits.promptLogitRows)
      throw new Error(`ModelRunner: ${promptRows} prompt-logprob rows, expected 1..${this.limits.promptLogitRows}`);
    if (pl.k < 0 || pl.k > MAX_TOP_LOGPROBS) throw new Error(`ModelRunner: prompt logprobs k ${pl.k}`);
    const start = batch.lastToken[pl.row] - spec.rows[pl.row].tokens.length + 1 + pl.first;
    device.queue.writeBuffer(
      this.step.promptGather,
      0,
      Uint32Array.from({ length: promptRows }, (_, i) => start + i),
    );
    device.queue.writeBuffer(this.step.promptTargets, 0, Uint32Array.from(pl.targets));
    fresh.push(...encodePromptLogits(forward, promptRows));
    return promptRows;
  }

  /**
   * One encoder: block copies before, the sampled-token feed of a pipelined decode step, one
   * compute pass (forward, prompt logprobs, sampler), copies after, and the outputs copied into
   * one staging buffer; submitted once.
   */
  private recordAndSubmit(
    spec: StepSpec,
    batch: StepBatch,
    graph: StepResult['graph'],
    replay: readonly KernelCall[],
    fresh: readonly KernelCall[],
    promptRows: number,
  ): SubmittedStep {
    const ctx = this.ctx;
    const device = ctx.device;
    const pl = spec.promptLogprobs ?? null;
    const sampling = spec.samples.length > 0;
    const before = ctx.profiler.dispatches;
    device.pushErrorScope('validation');
    const encoder = device.createCommandEncoder({ label: `step.${graph}` });
    if (spec.copiesBefore?.length) this.kv.recordCopyBlocks(encoder, spec.copiesBefore);
    if (spec.tokensFromLastSample) {
      if (!batch.decode) throw new Error('ModelRunner: tokensFromLastSample needs a decode step');
      // Record b of the sampler's output starts with the token id (SAMPLER_RECORD_BYTES apart).
      for (let b = 0; b < batch.B; b++)
        encoder.copyBufferToBuffer(this.sampler.output, b * SAMPLER_RECORD_BYTES, this.step.tokens, b * 4, 4);
    }
    const pass = recordCalls(ctx, encoder, `step.${graph}`, replay, fresh);
    // Prompt logprobs and the sampler bind buffers they own and rewrite per step: their calls are
    // made per step and recorded into the same pass, after the forward.
    const tail: KernelCall[] = [];
    if (pl) {
      const { promptOut: out, promptLogits: logits, promptTargets: targets } = this.step;
      tail.push(...this.promptLogprobs.encode({ out, logits, targets, T: promptRows, V: this.weights.config.vocabSize, k: pl.k }));
    }
    if (sampling) tail.push(...this.sampler.encode({ logits: this.step.logits }));
    for (const c of tail) c.record(pass, ctx);
    pass.end();
    if (spec.copiesAfter?.length) this.kv.recordCopyBlocks(encoder, spec.copiesAfter);
    const sampleBytes = sampling ? this.sampler.outputBytes() : 0;
    const promptBytes = pl ? promptRows * promptLogprobsStride(pl.k) * 4 : 0;
    const readbackBytes = sampleBytes + promptBytes;
    const staging = readbackBytes > 0 ? this.staging.take(readbackBytes) : null;
    if (staging && sampleBytes > 0) this.sampler.copyOutput(encoder, staging, 0);
    if (staging && promptBytes > 0) encoder.copyBufferToBuffer(this.step.promptOut, 0, staging, sampleBytes, promptBytes);
    ctx.profiler.submit(device.queue, [encoder.finish()]);
    return { graph, staging, sampleBytes, promptBytes, readbackBytes, dispatches: ctx.profiler.dispatches - before };
  }

  /** Awaits the step's error scope and readback (one GPU round trip) and decodes the outputs. */
  private async readBack(s: SubmittedStep, spec: StepSpec, promptRows: number): Promise<Pick<StepResult, 'sampled' | 'promptLogprobs'>> {
    const bytes = await this.staging.read(s);
    if (!bytes) return { sampled: [], promptLogprobs: null };
    const { sampleBytes, promptBytes } = s;
    const sampled = sampleBytes > 0 ? this.sampler.decodeOutput(bytes.slice(0, sampleBytes)) : [];
    const pl = spec.promptLogprobs;
    const promptLogprobs = pl ? decodePromptLogprobs(bytes.slice(sampleBytes, sampleBytes + promptBytes), promptRows, pl.k) : null;
    return { sampled, promptLogprobs };
  }

  /** The decode graph a batch of B rows at this context would use (bench figures); `lora`: rows with adapters. */
  describeDecode(B: number, longestContext: number, lora = false): DecodeGraph {
    return this.graphs.describeDecode(this.forwardContext(), B, longestContext, lora);
  }

  /** The general graph's decode step of B rows, even where the fused graph runs them (bench: what fusing saves). */
  describeGeneralDecode(B: number, longestContext: number, lora = false): DecodeGraph {
    return this.graphs.describeGeneralDecode(this.forwardContext(), B, longestContext, lora);
  }

  destroy(): void {
    this.graphs.clear();
    this.staging.destroy();
    this.step.destroy();
    this.sampler.destroy();
    this.promptLogprobs.destroy();
  }
}
