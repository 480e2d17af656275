/**
 * Scheduler: continuous batching for one resident model. One loop; between steps it
 *   1. reaps: aborted or cancelled requests, choices a stop string ended (stopChoice), finished
 *      requests: their rows, blocks, sampler slots and adapter are freed at once;
 *   2. admits waiting requests, fairly across owners (API keys) and first come first served within
 *      one (fair-order.ts), when their adapter is resident and rows and blocks allow (prefix-cache
 *      hits counted), reserving one block-table row per choice;
 *   3. runs one prefill step: prompt chunks of several requests (and recomputations of preempted
 *      choices) within the token budget; a prompt's last chunk samples its first tokens, its `n`
 *      choices forking from it (shared full blocks, copied partial block);
 *   4. runs one decode step: every running sequence, one token each, in one submission;
 *   5. yields to the event loop, so HTTP, training steps and other models interleave.
 * Alternating a prefill chunk with a decode step keeps a long prompt from stalling the running
 * decodes. When a decode needs a block and none is free, the newest sequences are preempted
 * (their blocks freed, recomputed later from their tokens); beams are never preempted.
 * A failing step fails the requests in it; the others go on.
 *
 * Not here: GPU work (model-runner.ts), block ownership (model/kv/block-manager.ts, sequence.ts),
 * per-token rules (request-state.ts), beam bookkeeping (beam-search.ts).
 */
import { type BlockCopy, type KvCache } from '../model/kv/kv-cache';
import { KV_BLOCK } from '../kernels/kv-layout';
import { AdapterResidency } from './adapter-residency';
import { BeamSearch, beamParams } from './beam-search';
import { prefixRoot, type KvBlockManager } from '../model/kv/block-manager';
import { EventStream } from './event-stream';
import { fairOrder } from './fair-order';
import type { LoraPool } from './lora-pool';
import type { ModelRunner } from './model-runner';
import { type ChoiceState, RequestState, validateRequest } from './request-state';
import { Sequence } from './sequence';
import { planContinuation, planDecode, planPrefill, type BatchState, type PlannedStep, type SchedulerStats } from './step-planner';
import { applyStepResults } from './step-results';
import type { GenerationHandle, GenerationRequest } from './types';

export interface SchedulerParts {
  runner: ModelRunner;
  kv: KvCache;
  blocks: KvBlockManager;
  maxModelLen: number;
  /** The model's adapter pool (created on first use). */
  lora: () => LoraPool;
}

export class Scheduler implements BatchState {
  private readonly waiting: RequestState[] = [];
  readonly active: RequestState[] = [];
  private readonly adapters: AdapterResidency;
  readonly beamSeqs = new Map<RequestState, Sequence[]>();
  pendingCopies: BlockCopy[] = [];
  /** Jump-forward decoding of grammar-forced tokens (jump-forward.ts); the Engine turns it on for GPUs (engine.ts says why). */
  jumpForward = false;
  private wake: (() => void) | null = null;
  private looping = false;
  private admitted = 0;
  readonly stats: SchedulerStats = { steps: 0, prefillSteps: 0, decodeSteps: 0, pipelinedSteps: 0, preemptions: 0, running: 0, waiting: 0 };

  constructor(private readonly m: SchedulerParts) {
    this.adapters = new AdapterResidency(m.lora, () => this.kick());
  }

  get mgr(): KvBlockManager {
    return this.m.blocks;
  }

  get runner(): ModelRunner {
    return this.m.runner;
  }

  get kv(): KvCache {
    return this.m.kv;
  }

  get maxModelLen(): number {
    return this.m.maxModelLen;
  }

  /** Queues a request; the handle's iterator reports its events (or its error). */
  submit(req: GenerationRequest): GenerationHandle {
    let state: RequestState | null = null;
    const stream = new EventStream({
      onCancel: () => state && this.cancel(state),
      onStopChoice: (i) => {
        const c = state?.choices[i];
        if (c && !c.finished && !state!.beam) {
          c.finished = true;
          this.kick();
        }
      },
    });
    try {
      const chunk = this.m.runner.limits.maxTokens;
      const local = this.mgr.local;
      validateRequest(req, {
        maxModelLen: this.m.maxModelLen,
        vocabSize: this.m.runner.weights.config.vocabSize,
        maxSeqs: this.mgr.maxSeqs,
        numBlocks: this.mgr.numBlocks,
        seqBlocks: (tokens) => this.mgr.blocksToHold(tokens, chunk),
        localPool: local ? { numBlocks: local.numBlocks, seqBlocks: (tokens) => local.blocksToHold(tokens, chunk) } : undefined,
      });
    } catch (e) {
      for (const c of req.constraints ?? []) c?.dispose();
      stream.fail(e);
      return stream;
    }
    state = new RequestState(req, stream, prefixRoot(req.cacheSalt, req.adapter?.key ?? null));
    const s = state;
    if (req.signal) {
      if (req.signal.aborted) {
        for (const c of req.constraints ?? []) c?.dispose();
        stream.end();
        return stream;
      }
      req.signal.addEventListener('abort', () => this.cancel(s), { once: true });
    }
    this.waiting.push(s);
    this.kick();
    return stream;
  }

  private cancel(s: RequestState): void {
    if (s.cancelled || s.phase === 'done') return;
    s.cancelled = true;
    this.kick();
  }

  private kick(): void {
    const w = this.wake;
    this.wake = null;
    w?.();
    if (!this.looping) void this.loop();
  }

  private async loop(): Promise<void> {
    this.looping = true;
    try {
      while (this.waiting.length > 0 || this.active.length > 0) {
        this.reap();
        this.admit();
        let worked = false;
        const prefill = planPrefill(this);
        if (prefill) {
          await this.execute(prefill, 'prefill');
          worked = true;
          this.reap();
        }
        const decode = planDecode(this);
        if (decode) {
          await this.execute(decode, 'decode');
          worked = true;
        }
        this.reap();
        this.stats.running = this.active.length;
        this.stats.waiting = this.waiting.length;
        if (!worked && (this.waiting.length > 0 || this.active.length > 0)) {
          // Nothing can run now (adapters loading, memory held): sleep until something changes.
          await new Promise<void>((resolve) => (this.wake = resolve));
        } else await yieldToEventLoop();
      }
    } finally {
      this.looping = false;
    }
  }

  // ---- 1. reap -------------------------------------------------------------------------------

  private reap(): void {
    // A copy: cancelled requests are spliced out while iterating.
    for (const s of this.waiting.slice()) {
      if (s.cancelled) {
        this.waiting.splice(this.waiting.indexOf(s), 1);
        this.close(s);
      }
    }
    for (const s of this.active.slice()) {
      if (!s.beam) for (const c of s.choices) if (c.finished && c.seq) this.releaseChoice(s, c);
      if (s.settled) {
        this.active.splice(this.active.indexOf(s), 1);
        this.close(s);
      }
    }
  }

  private releaseChoice(s: RequestState, c: ChoiceState): void {
    const seq = c.seq!;
    seq.releaseBlocks(this.mgr);
    this.m.runner.sampler.release(seq.row);
    this.mgr.freeRow(seq.row);
    s.rows.splice(s.rows.indexOf(seq.row), 1);
    c.seq = null;
    c.constraint?.dispose();
  }

  /** Frees everything a request holds and ends its stream (with abort events when cancelled). */
  private close(s: RequestState, error?: unknown): void {
    if (s.phase === 'done') return;
    const beamSeqs = this.beamSeqs.get(s) ?? [];
    this.beamSeqs.delete(s);
    const seqs = new Set([s.promptSeq, ...s.choices.map((c) => c.seq), ...beamSeqs].filter((q): q is Sequence => q !== null));
    for (const q of seqs) q.releaseBlocks(this.mgr);
    for (const row of s.rows) {
      this.m.runner.sampler.release(row);
      this.mgr.freeRow(row);
    }
    s.rows = [];
    for (const c of s.choices) {
      c.seq = null;
      c.constraint?.dispose();
    }
    if (s.adapterAcquired) this.m.lora().release(s.adapterKey!);
    s.adapterAcquired = false;
    if (error !== undefined) s.stream.fail(error);
    else {
      if (s.cancelled && !s.stream.closed)
        for (const c of s.choices) if (!c.finished) s.emitFinished(c.index, { reason: 'abort', stopTokenId: null });
      s.stream.end();
    }
    s.phase = 'done';
    this.kick();
  }

  fail(s: RequestState, error: unknown): void {
    const i = this.active.indexOf(s);
    if (i >= 0) this.active.splice(i, 1);
    const j = this.waiting.indexOf(s);
    if (j >= 0) this.waiting.splice(j, 1);
    this.close(s, error);
  }

  // ---- 2. admit ------------------------------------------------------------------------------

  private admit(): void {
    const ownerOf = (s: RequestState) => s.req.owner ?? '';
    const held = new Map<string, number>();
    for (const a of this.active) held.set(ownerOf(a), (held.get(ownerOf(a)) ?? 0) + a.rows.length);
    const order = fairOrder(this.waiting, ownerOf, held);
    for (let s = order.next(); s; s = order.next()) if (this.tryAdmit(s)) order.took(s, s.rows.length);
  }

  /** Admits `s` when its adapter is resident and rows and blocks allow; whether it was. */
  private tryAdmit(s: RequestState): boolean {
    const req = s.req;
    if (req.adapter) {
      const state = this.adapters.ensure(req.adapter);
      if (!state.ready) {
        if (state.error) this.fail(s, state.error);
        return false;
      }
    }
    const rowsNeeded = req.n;
    if (this.mgr.rowsAvailable < rowsNeeded) return false;
    const P = req.promptTokenIds.length;
    // Prompt logprobs need every prompt position's logits: no prefix reuse (as vLLM).
    const match =
      req.promptLogprobs === null
        ? this.mgr.match(s.root, req.promptTokenIds, Math.floor((P - 1) / KV_BLOCK))
        : { blocks: [], keys: [], local: [] };
    const running = this.active.reduce((n, a) => n + a.choices.filter((c) => c.seq && !c.finished).length, 0);
    if (!this.mgr.admits(P + 1, this.m.runner.limits.maxTokens, match, req.n - 1, running)) return false;
    const rows = Array.from({ length: rowsNeeded }, () => this.mgr.allocRow()!);
    try {
      const params = req.beamSearch ? beamParams(req.n, this.m.runner.weights.config.vocabSize) : null;
      rows.forEach((row, i) => this.m.runner.sampler.admit(row, params ?? req.sampling[i], req.promptTokenIds));
    } catch (e) {
      for (const row of rows) this.mgr.freeRow(row);
      this.waiting.splice(this.waiting.indexOf(s), 1);
      s.phase = 'waiting';
      this.close(s, e);
      return false;
    }
    s.rows = rows;
    if (req.adapter) {
      s.adapterSlot = this.m.lora().acquire(req.adapter.key);
      s.adapterAcquired = true;
    }
    s.promptSeq = new Sequence(rows[0], req.promptTokenIds, s.root);
    s.promptSeq.adoptPrefix(this.mgr, match);
    s.cachedTokens = match.blocks.length * KV_BLOCK;
    if (req.beamSearch) {
      const eos = new Set(req.sampling[0].ignoreEos ? [] : (req.sampling[0].eosTokenIds ?? []));
      s.beam = new BeamSearch(req.n, req.beamSearch.lengthPenalty, P, eos, req.sampling[0].topLogprobs ?? 0);
    }
    s.phase = 'prefill';
    s.admitOrder = ++this.admitted;
    this.waiting.splice(this.waiting.indexOf(s), 1);
    this.active.push(s);
    return true;
  }

  // ---- steps ---------------------------------------------------------------------------------

  /** Runs a step and applies its results. */
  private execute(step: PlannedStep, kind: 'prefill' | 'decode'): Promise<void> {
    return kind === 'decode' ? this.executeDecode(step) : this.launch(step, kind, false);
  }

  /**
   * Submits a planned step at once (ModelRunner.run submits synchronously) and returns a promise
   * that applies its results, or fails the requests in it.
   */
  private launch(step: PlannedStep, kind: 'prefill' | 'decode', tokensFromLastSample: boolean, after?: Promise<void>): Promise<void> {
    const involved = [...new Set(step.owners.map((o) => o.req))];
    for (const o of step.owners) {
      const seqs =
        o.kind === 'prompt' ? [o.req.promptSeq!, ...o.children] : o.kind === 'beam' ? [this.beamSeqs.get(o.req)![o.beam]] : [o.choice.seq!];
      for (const q of seqs) q.syncTable(this.m.kv);
    }
    const copiesBefore = this.pendingCopies;
    this.pendingCopies = [];
    const pending = this.m.runner.run({
      rows: step.rows,
      samples: step.samples,
      promptLogprobs: step.promptLogprobs,
      copiesBefore,
      copiesAfter: step.copiesAfter,
      tokensFromLastSample,
    });
    // Results are applied in submission order: a pipelined step's after its predecessor's.
    const ready = after ? after.then(() => pending) : pending;
    return ready.then(
      (result) => {
        this.stats.steps++;
        if (kind === 'prefill') this.stats.prefillSteps++;
        else this.stats.decodeSteps++;
        if (tokensFromLastSample) this.stats.pipelinedSteps++;
        applyStepResults(this, step, result);
      },
      (e: unknown) => {
        for (const s of involved) this.fail(s, e);
      },
    );
  }

  /**
   * Decode steps, pipelined while the batch stays the same: step N + 1 is submitted before step N
   * is read back (its input ids copied on the GPU from N's samples), so the GPU never waits for the
   * CPU's readback and bookkeeping. A choice that finishes at step N wastes its row of N + 1 (that
   * token is dropped); the pipeline stops as soon as anything changes.
   */
  private async executeDecode(first: PlannedStep): Promise<void> {
    let step = first;
    let done = this.launch(step, 'decode', false);
    for (;;) {
      const next = this.canContinue(step) ? planContinuation(this, step) : null;
      const nextDone = next ? this.launch(next, 'decode', true, done) : null;
      await done;
      if (!next) return;
      step = next;
      done = nextDone!;
    }
  }

  /**
   * Whether the step after `prev` may be planned before prev's tokens are known: nothing waits or
   * needs reaping, every running choice is in prev, plain decode rows only (no beams, grammars or
   * multi-token bad words, whose inputs depend on the tokens), none ending by length at prev.
   */
  private canContinue(prev: PlannedStep): boolean {
    if (this.waiting.length > 0 || this.pendingCopies.length > 0) return false;
    let running = 0;
    for (const s of this.active) {
      if (s.cancelled || s.phase !== 'decode' || s.beam) return false;
      if (s.req.badWords.some((w) => w.length > 1)) return false;
      for (const c of s.choices) {
        if (c.preempted || (c.finished && c.seq)) return false;
        if (c.seq && !c.finished) running++;
      }
    }
    if (running !== prev.owners.length) return false;
    // From what prev was planned with, not from applied results (a pipelined step's results may
    // already be applied, or not): prev's token makes the output prev.outputLen + 1 tokens long
    // and the sequence pos + 2.
    return prev.owners.every((o, i) => {
      if (o.kind !== 'decode') return false;
      const c = o.choice;
      return (
        !c.finished && !c.constraint && prev.samples[i].outputLen + 1 < o.req.req.maxTokens && prev.rows[i].pos + 2 < this.m.maxModelLen
      );
    });
  }
}

/** Lets queued tasks (HTTP, training steps, timers) run between steps. */
function yieldToEventLoop(): Promise<void> {
  const g = globalThis as { setImmediate?: (f: () => void) => void; MessageChannel?: typeof MessageChannel };
  if (g.setImmediate) return new Promise((resolve) => g.setImmediate!(resolve));
  if (g.MessageChannel) {
    return new Promise((resolve) => {
      const ch = new g.MessageChannel!();
      ch.port1.onmessage = () => {
        ch.port1.close();
        resolve();
      };
      ch.port2.postMessage(null);
    });
  }
  return new Promise((resolve) => setTimeout(resolve, 0));
}
