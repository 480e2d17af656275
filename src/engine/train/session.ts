/**
 * GpuTrainingSession: the TrainingSession of types.ts on WebGPU. One optimizer step:
 *
 * 1. Pack the step's sequences into micro-batches that fit the activation plan (in order).
 * 2. Coefficients. SFT's are known before the forward (c = m w / #trainable), so each micro-batch
 *    is one submission: forward, head with dlogits, backward. RL's depend on the policy's new
 *    logprobs (ratios, clipping, sequence means over whole importance groups, possibly spanning
 *    micro-batches), so a forward submission per micro-batch computes them first; they are read
 *    back (T floats), the coefficients are computed on the CPU in f64 (loss.ts, the unit-tested
 *    formulas), uploaded, and the backward follows. With one micro-batch the backward reuses the
 *    saved activations; with several, each micro-batch's forward is re-run before its backward
 *    (the activations of only one micro-batch exist at a time). Cost of the CPU pass: one
 *    readback round trip per RL step (docs/performance.md gives the figure).
 * 3. After the last micro-batch, in the same submission: global gradient norm, clip factor and
 *    AdamW, all on the GPU; the norm comes back with the step's logprobs for the metrics.
 *
 * Gradients are zeroed at the step's first submission and accumulated over micro-batches in
 * order, so the same inputs give bit-identical adapters. Calls on one session are serialised.
 * Not here: the graphs (graph-*.ts), the memory plan (memory-plan.ts), the loss math (loss.ts).
 */
import type { KernelContext } from '../gpu/context';
import type { KernelCall } from '../gpu/kernel-call';
import { writeBytes } from '../gpu/buffers';
import type { LoraConfig } from '../model/lora/lora-config';
import type { TensorData } from '../tensor/tensor-data';
import { CallCache } from '../gpu/call-cache';
import { encodeLayerBackward } from './graph-backward';
import { encodeEmbedding, encodeLayerForward, type MicroBatchDims, type TrainGraph } from './graph-forward';
import { encodeFinalNorm, encodeHead, entropyOffset } from './graph-head';
import { stepEntropy, stepLoss } from './loss';
import { packMicroBatches, rowsFromTokens, tokensFromRows, type MicroBatch } from './micro-batches';
import { Staging, submitCalls, type Copy } from './submit';
import type { LossSpec, OptimizerConfig, OptimizerState, StepMetrics, TrainingSequence, TrainingSession } from './types';

/**
 * Micro-batch shapes whose training graphs are kept (record once, replay): a micro-batch's calls
 * depend only on its shape (tokens, sequences, longest sequence) and the session's fixed buffers,
 * never on the token values, and building them costs ~2000 calls for a SmolLM2-135M step (about a
 * millisecond apiece on Dawn, docs/engine.md "Training"), so runs of equal shapes encode once.
 */
const TRAINING_GRAPHS = 6;

export class GpuTrainingSession implements TrainingSession {
  readonly lora: LoraConfig;
  readonly parameterCount: number;
  private queue: Promise<unknown> = Promise.resolve();
  private disposed = false;
  private readonly calls = new CallCache<KernelCall[]>(TRAINING_GRAPHS, { callsOf: (calls) => calls, deferDispose: true });

  constructor(
    private readonly ctx: KernelContext,
    private readonly graph: TrainGraph,
    private readonly optimizer: OptimizerConfig,
    /** Frees what the session owns (its activation buffers and LoRA state). */
    private readonly release: () => void,
  ) {
    this.lora = graph.lora.config;
    this.parameterCount = graph.lora.elements;
  }

  step(sequences: TrainingSequence[], loss: LossSpec, learningRate: number, signal?: AbortSignal): Promise<StepMetrics> {
    return this.serial(() => this.runStep(sequences, loss, learningRate, signal));
  }

  logprobs(sequences: TrainingSequence[], signal?: AbortSignal): Promise<Float32Array[]> {
    return this.serial(() => this.runLogprobs(sequences, signal));
  }

  exportAdapter(): Promise<TensorData[]> {
    return this.serial(() => this.graph.state.exportAdapter());
  }

  exportOptimizerState(): Promise<OptimizerState> {
    return this.serial(() => this.graph.state.exportOptimizerState());
  }

  /** GPU bytes this session allocated (LoRA state and activations; the base weights are shared). */
  get gpuBytes(): number {
    return this.graph.state.bytes + this.graph.buf.bytes;
  }

  /** The activation plan (mode, micro-batch capacity) the session runs with. */
  get activationPlan() {
    return this.graph.buf.plan;
  }

  /** The gradients of the last step, before clipping (tests compare them with the reference). */
  gradients(): Promise<Float32Array> {
    return this.serial(() => this.graph.state.gradients());
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    // Whatever is queued finishes first; the buffers go after.
    void this.queue.finally(() => {
      this.calls.clear();
      this.release();
    });
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    if (this.disposed) return Promise.reject(new Error('training session: used after dispose()'));
    const run = this.queue.then(fn, fn);
    this.queue = run.catch(() => undefined);
    return run;
  }

  private pack(sequences: TrainingSequence[]): MicroBatch[] {
    const plan = this.graph.buf.plan;
    return packMicroBatches(sequences, {
      tokens: plan.tokens,
      sequences: plan.sequences,
      maxBlocksPerSeq: plan.maxBlocksPerSeq,
      vocabSize: this.graph.weights.config.vocabSize,
    });
  }

  /** Writes a micro-batch's tokens, targets, rows and block table (and coefficients) for its next submission. */
  private upload(mb: MicroBatch, coefficients: readonly ArrayLike<number>[] | null): void {
    const { device } = this.ctx;
    const buf = this.graph.buf;
    writeBytes(device, buf.get('tokens'), 0, mb.tokens);
    writeBytes(device, buf.get('targets'), 0, mb.targets);
    writeBytes(device, buf.get('rows'), 0, mb.rows);
    writeBytes(device, buf.get('blockTable'), 0, mb.blockTable);
    if (coefficients) writeBytes(device, buf.get('coef'), 0, rowsFromTokens(mb, coefficients));
  }

  /** Embedding, every layer, final norm and head (with dlogits and dX when `grad`). */
  private forwardCalls(d: MicroBatchDims, grad: boolean): KernelCall[] {
    return this.calls.get(`forward.${grad}|${d.T}|${d.B}|${d.maxCount}`, () => {
      const g = this.graph;
      const calls = [...encodeEmbedding(g, d)];
      for (let l = 0; l < g.weights.config.numLayers; l++) calls.push(...encodeLayerForward(g, l, d, { writeOutput: true }));
      calls.push(...encodeFinalNorm(g, d), ...encodeHead(g, d, grad));
      return calls;
    });
  }

  /** The head alone with dlogits (RL, one micro-batch: the layers' activations are still there). */
  private headCalls(d: MicroBatchDims): KernelCall[] {
    return this.calls.get(`head|${d.T}|${d.B}|${d.maxCount}`, () => [
      ...encodeFinalNorm(this.graph, d),
      ...encodeHead(this.graph, d, true),
    ]);
  }

  private backwardCalls(d: MicroBatchDims): KernelCall[] {
    return this.calls.get(`backward|${d.T}|${d.B}|${d.maxCount}`, () => {
      const calls: KernelCall[] = [];
      for (let l = this.graph.weights.config.numLayers - 1; l >= 0; l--) calls.push(...encodeLayerBackward(this.graph, l, d));
      return calls;
    });
  }

  /** Global norm, clip factor and the AdamW update: the end of a step's last submission. */
  private optimizerCalls(learningRate: number): KernelCall[] {
    const { k, state, buf } = this.graph;
    const n = state.plan.elements;
    state.step += 1;
    return [
      ...k.gradNorm.encode({
        grads: state.grads,
        n,
        part: buf.get('normPart'),
        stats: buf.get('normStats'),
        maxNorm: this.optimizer.maxGradNorm,
      }),
      ...k.adamw.encode({
        params: state.params,
        grads: state.grads,
        m: state.m,
        v: state.v,
        stats: buf.get('normStats'),
        n,
        hyper: {
          lr: learningRate,
          beta1: this.optimizer.beta1,
          beta2: this.optimizer.beta2,
          eps: this.optimizer.eps,
          weightDecay: this.optimizer.weightDecay,
          step: state.step,
        },
      }),
    ];
  }

  /** Copies of a micro-batch's per-row logprobs and entropies into the staging buffer at `base` (floats). */
  private statsCopies(mb: MicroBatch, base: number, total: number): Copy[] {
    const stats = this.graph.buf.get('stats');
    return [
      { src: stats, srcOffset: 0, dstOffset: 4 * base, bytes: 4 * mb.T },
      { src: stats, srcOffset: 4 * entropyOffset(this.graph), dstOffset: 4 * (total + base), bytes: 4 * mb.T },
    ];
  }

  private async runStep(sequences: TrainingSequence[], loss: LossSpec, learningRate: number, signal?: AbortSignal): Promise<StepMetrics> {
    if (!(learningRate >= 0) || !Number.isFinite(learningRate))
      throw new Error(`training: learning rate ${learningRate} is not a finite non-negative number`);
    if (sequences.length === 0) throw new Error('training: an optimizer step needs at least one sequence');
    const started = performance.now();
    const mbs = this.pack(sequences);
    const total = mbs.reduce((s, mb) => s + mb.T, 0);
    const step: StepRun = {
      sequences,
      mbs,
      total,
      bases: mbs.map((_, j) => mbs.slice(0, j).reduce((s, mb) => s + mb.T, 0)),
      learningRate,
      signal,
      stats: new Staging(this.ctx.device, 4 * (2 * total + 4)),
      own: [],
    };
    try {
      const out = loss.kind === 'sft' ? await this.sftStep(step, loss) : await this.rlStep(step, loss);
      return stepMetrics(step, loss, out, started);
    } finally {
      // The staging reads above waited for every submission of the step.
      await this.ctx.device.queue.onSubmittedWorkDone();
      step.stats.destroy();
      for (const c of step.own) c.dispose();
      this.calls.release();
    }
  }

  /**
   * SFT: the coefficients do not depend on the logprobs (c = m w / #trainable), so one submission
   * per micro-batch: forward, head with dlogits, backward, and after the last the optimizer.
   */
  private async sftStep(step: StepRun, loss: LossSpec): Promise<StepOutput> {
    const { sequences, mbs, total, bases, stats } = step;
    const coefficients = stepLoss(
      sequences,
      sequences.map((s) => new Float32Array(s.tokens.length)),
      loss,
    ).coefficients;
    for (const [j, mb] of mbs.entries()) {
      const last = j === mbs.length - 1;
      this.upload(mb, coefficients);
      const work = [...this.forwardCalls(dims(mb), true), ...this.backwardCalls(dims(mb)), ...(last ? this.optimizerStep(step) : [])];
      await this.submitPass(step, j, 'train.step', work, [
        ...this.statsCopies(mb, bases[j], total),
        ...(last ? [this.normCopy(4 * 2 * total)] : []),
      ]);
    }
    const values = await stats.read();
    return { ...tokenValues(step, values), gradNorm: values[2 * total] };
  }

  /**
   * RL: the coefficients depend on the new logprobs. A forward submission per micro-batch, one
   * readback, the coefficients on the CPU (loss.ts), then a backward submission per micro-batch
   * (re-running the forward when there are several), and after the last the optimizer.
   */
  private async rlStep(step: StepRun, loss: LossSpec): Promise<StepOutput> {
    const { sequences, mbs, total, bases, stats } = step;
    for (const [j, mb] of mbs.entries()) {
      this.upload(mb, null);
      await this.submitPass(step, j, 'train.forward', this.forwardCalls(dims(mb), false), this.statsCopies(mb, bases[j], total));
    }
    const forward = tokenValues(step, await stats.read());
    const coefficients = stepLoss(sequences, forward.newLogprobs, loss).coefficients;
    const back = new Staging(this.ctx.device, 16);
    try {
      for (const [j, mb] of mbs.entries()) {
        const last = j === mbs.length - 1;
        checkAborted(step.signal);
        // One micro-batch: its activations are still there. Several: re-run the forward.
        if (mbs.length > 1) this.upload(mb, coefficients);
        else writeBytes(this.ctx.device, this.graph.buf.get('coef'), 0, rowsFromTokens(mb, coefficients));
        const fwd = mbs.length > 1 ? this.forwardCalls(dims(mb), true) : this.headCalls(dims(mb));
        const work = [...fwd, ...this.backwardCalls(dims(mb)), ...(last ? this.optimizerStep(step) : [])];
        await submitCalls(this.ctx, work, { label: 'train.backward', copies: last ? [this.normCopy(0)] : [], staging: back });
      }
      return { ...forward, gradNorm: (await back.read())[0] };
    } finally {
      back.destroy();
    }
  }

  /** A submission of the step's first pass over the micro-batches; the first one zeroes the gradients. */
  private async submitPass(step: StepRun, j: number, label: string, work: KernelCall[], copies: Copy[]): Promise<void> {
    checkAborted(step.signal);
    await submitCalls(this.ctx, work, { label, clear: j === 0 ? [this.graph.state.grads] : [], copies, staging: step.stats });
  }

  /** The optimizer's calls for this step, disposed with the step (their uniforms change every step). */
  private optimizerStep(step: StepRun): KernelCall[] {
    const calls = this.optimizerCalls(step.learningRate);
    step.own.push(...calls);
    return calls;
  }

  /** A copy of the gradient norm stats (16 bytes) into a staging buffer at `dstOffset` bytes. */
  private normCopy(dstOffset: number): Copy {
    return { src: this.graph.buf.get('normStats'), srcOffset: 0, dstOffset, bytes: 16 };
  }

  private async runLogprobs(sequences: TrainingSequence[], signal?: AbortSignal): Promise<Float32Array[]> {
    const mbs = this.pack(sequences);
    const total = mbs.reduce((s, mb) => s + mb.T, 0);
    const stats = new Staging(this.ctx.device, 4 * 2 * total);
    try {
      let base = 0;
      for (const mb of mbs) {
        if (signal?.aborted) throw signal.reason ?? new Error('logprobs aborted');
        this.upload(mb, null);
        const work = this.forwardCalls(dims(mb), false);
        await submitCalls(this.ctx, work, { label: 'train.logprobs', copies: this.statsCopies(mb, base, total), staging: stats });
        base += mb.T;
      }
      const values = await stats.read();
      const out: Float32Array[] = new Array(sequences.length);
      base = 0;
      for (const mb of mbs) {
        tokensFromRows(mb, values.subarray(base, base + mb.T), out);
        base += mb.T;
      }
      return out;
    } finally {
      await this.ctx.device.queue.onSubmittedWorkDone();
      stats.destroy();
      this.calls.release();
    }
  }
}

/** One optimizer step in flight: its micro-batches and what it reads back. */
interface StepRun {
  sequences: TrainingSequence[];
  mbs: MicroBatch[];
  /** Rows of all micro-batches, and the first row of each. */
  total: number;
  bases: number[];
  learningRate: number;
  signal?: AbortSignal;
  /** Per-row logprobs [total], entropies [total] and the norm stats [4], as floats. */
  stats: Staging;
  /** Calls made for this step only (the optimizer's). */
  own: KernelCall[];
}

/** What a step's submissions give back: per sequence, the new logprob and entropy of each token, and the gradient norm. */
interface StepOutput {
  newLogprobs: Float32Array[];
  entropies: Float32Array[];
  gradNorm: number;
}

function dims(mb: MicroBatch): MicroBatchDims {
  return { T: mb.T, B: mb.sequences.length, maxCount: mb.maxCount };
}

function checkAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw signal.reason ?? new Error('training step aborted');
}

/** The staging buffer's per-row logprobs and entropies, per sequence and token. */
function tokenValues(step: StepRun, values: Float32Array): Omit<StepOutput, 'gradNorm'> {
  const { sequences, mbs, total, bases } = step;
  const newLogprobs: Float32Array[] = new Array(sequences.length);
  const entropies: Float32Array[] = new Array(sequences.length);
  mbs.forEach((mb, j) => {
    tokensFromRows(mb, values.subarray(bases[j], bases[j] + mb.T), newLogprobs);
    tokensFromRows(mb, values.subarray(total + bases[j], total + bases[j] + mb.T), entropies);
  });
  return { newLogprobs, entropies };
}

function stepMetrics(step: StepRun, loss: LossSpec, out: StepOutput, started: number): StepMetrics {
  const { sequences, learningRate } = step;
  const result = stepLoss(sequences, out.newLogprobs, loss);
  const entropy = stepEntropy(sequences, out.entropies, loss);
  const seconds = (performance.now() - started) / 1000;
  const numTokens = sequences.reduce((s, q) => s + q.tokens.length, 0);
  const metrics: StepMetrics = {
    loss: result.loss,
    gradNorm: out.gradNorm,
    learningRate,
    numTrainableTokens: result.trainableTokens,
    numTokens,
    tokensPerSecond: numTokens / Math.max(seconds, 1e-9),
  };
  if (result.policyLoss !== null) metrics.policyLoss = result.policyLoss;
  if (result.maxRatioDeviation !== null) metrics.maxRatioDeviation = result.maxRatioDeviation;
  if (entropy !== null) metrics.entropy = entropy;
  return metrics;
}
