/**
 * Planning the scheduler's steps (scheduler.ts says when): which sequences run, with which tokens,
 * blocks and sampler rows.
 * - Prefill: recomputations of preempted choices first, then prompts in admission order, chunked
 *   to the step's token budget and the blocks at hand; prompt logprobs for one request per step.
 *   A prompt's last chunk samples its first token once per choice, the `n` choices forking from it
 *   here (shared full blocks, the partial block copied after the step's pass).
 * - Decode: every running sequence one token; a sequence that needs a block and finds none
 *   preempts the newest preemptable sequence (`preemptOne`), possibly itself. A constrained choice
 *   whose grammar forces the next tokens carries them as a draft (jump-forward.ts) when the step
 *   has sampler rows to spare.
 * Sequences are advanced (and their full blocks registered in the prefix cache) when planned: the
 * step is submitted before anything else can read those blocks.
 *
 * Not here: running the step and applying its tokens (step-results.ts).
 */
import { type BlockCopy, type KvCache } from '../model/kv/kv-cache';
import { KV_BLOCK } from '../kernels/kv-layout';
import type { KvBlockManager } from '../model/kv/block-manager';
import type { ModelRunner } from './model-runner';
import type { PromptLogprobsRequest, RunnerRow, SampleRequest } from './step-spec';
import { canJumpForward, planDraft } from './jump-forward';
import { bannedByBadWords, type ChoiceState, type RequestState } from './request-state';
import type { Sequence } from './sequence';

/** What a step's results are applied to, in row order. */
export type RowOwner =
  | { kind: 'prompt'; req: RequestState; finishing: boolean; children: Sequence[] }
  | { kind: 'recompute'; req: RequestState; choice: ChoiceState; finishing: boolean }
  /** `draft`: the forced tokens after the row's own (jump-forward.ts); its samples follow the row's in order. */
  | { kind: 'decode'; req: RequestState; choice: ChoiceState; draft?: number[] }
  | { kind: 'beam'; req: RequestState; beam: number };

export interface PlannedStep {
  rows: RunnerRow[];
  samples: SampleRequest[];
  owners: RowOwner[];
  promptLogprobs: (PromptLogprobsRequest & { req: RequestState; position: number }) | null;
  copiesAfter: BlockCopy[];
}

export interface SchedulerStats {
  steps: number;
  prefillSteps: number;
  decodeSteps: number;
  /** Decode steps submitted before their predecessor was read back. */
  pipelinedSteps: number;
  preemptions: number;
  running: number;
  waiting: number;
}

/** The scheduler state the step functions read and change. */
export interface BatchState {
  readonly active: RequestState[];
  readonly mgr: KvBlockManager;
  readonly runner: ModelRunner;
  readonly kv: KvCache;
  readonly maxModelLen: number;
  /** Live beams' sequences of each beam-search request, aligned with BeamSearch.live. */
  readonly beamSeqs: Map<RequestState, Sequence[]>;
  /** Block copies for the next step (beam forks). */
  pendingCopies: BlockCopy[];
  /** Decode grammar-forced tokens as drafts (jump-forward.ts). */
  readonly jumpForward: boolean;
  readonly stats: SchedulerStats;
  fail(s: RequestState, error: unknown): void;
}

export function planPrefill(b: BatchState): PlannedStep | null {
  const limits = b.runner.limits;
  const step: PlannedStep = { rows: [], samples: [], owners: [], promptLogprobs: null, copiesAfter: [] };
  let budget = limits.maxTokens;
  const candidates: Array<{ s: RequestState; choice: ChoiceState | null }> = [];
  for (const s of b.active) {
    if (s.phase === 'decode') for (const c of s.choices) if (c.preempted && !c.finished && c.seq) candidates.push({ s, choice: c });
  }
  for (const s of b.active) if (s.phase === 'prefill') candidates.push({ s, choice: null });
  for (const { s, choice } of candidates) {
    if (budget === 0 || step.rows.length >= limits.maxBatch) break;
    const seq = choice ? choice.seq! : s.promptSeq!;
    const samplesHere = choice ? 1 : s.beam ? 1 : s.req.n;
    if (step.samples.length + samplesHere > limits.maxBatch) continue;
    if (seq.blocks.length === 0 && seq.computed === 0 && (choice || s.req.promptLogprobs === null)) {
      // A preempted sequence (or prompt) starts again: reuse what the prefix cache still holds.
      const match = b.mgr.match(s.root, seq.tokens, Math.floor((seq.length - 1) / KV_BLOCK));
      seq.adoptPrefix(b.mgr, match);
      if (!choice) s.cachedTokens = seq.computed;
    }
    let chunk = Math.min(seq.length - seq.computed, budget);
    const wantsLogprobs = !choice && s.req.promptLogprobs !== null;
    if (wantsLogprobs) {
      if (step.promptLogprobs) continue;
      chunk = Math.min(chunk, limits.promptLogitRows);
    }
    if (choice && b.mgr.window === 0) {
      // A recomputation takes all its blocks at once (plus the next token's), or waits: it cannot
      // be preempted again, so it must not hold part of them while it waits. With a sliding window
      // it holds only a window's blocks whatever its length: it goes chunk by chunk (every pool
      // when every layer slides, the local pool of a hybrid model).
      if (!seq.reserve(b.mgr, seq.computed + chunk, seq.length + 1)) continue;
    } else if (!seq.reserve(b.mgr, seq.computed + chunk)) {
      chunk = Math.min(chunk, seq.room(b.mgr));
      if (chunk <= 0 || !seq.reserve(b.mgr, seq.computed + chunk)) continue;
    }
    const finishing = seq.computed + chunk === seq.length;
    if (finishing && !choice && !s.beam && s.req.n > 1 && seq.length % KV_BLOCK !== 0 && !b.mgr.hasAvailable(s.req.n - 1)) {
      continue; // the forks need a block each (in every pool) for their copy of the partial block
    }
    const at = step.rows.length;
    const pos = seq.computed;
    step.rows.push({ seq: seq.row, pos, tokens: seq.tokens.slice(pos, pos + chunk), adapterSlot: s.adapterSlot });
    if (wantsLogprobs) {
      const end = Math.min(pos + chunk, seq.length - 1);
      if (end > pos)
        step.promptLogprobs = {
          req: s,
          position: pos,
          row: at,
          first: 0,
          targets: seq.tokens.slice(pos + 1, end + 1),
          k: s.req.promptLogprobs!,
        };
    }
    seq.advance(b.mgr, chunk);
    budget -= chunk;
    if (choice) {
      step.owners.push({ kind: 'recompute', req: s, choice, finishing });
      if (finishing) step.samples.push(sampleRow(b, s, choice, at));
      continue;
    }
    const children: Sequence[] = [];
    if (finishing) {
      if (s.beam) step.samples.push({ slot: seq.row, outputLen: 0, row: at, updateCounts: false });
      else {
        for (let i = 1; i < s.req.n; i++) {
          const fork = seq.fork(b.mgr, s.rows[i])!;
          children.push(fork.child);
          step.copiesAfter.push(...fork.copies);
        }
        s.choices.forEach((c, i) => {
          c.seq = i === 0 ? seq : children[i - 1];
          step.samples.push(sampleRow(b, s, c, at));
        });
      }
    }
    step.owners.push({ kind: 'prompt', req: s, finishing, children });
  }
  return step.rows.length > 0 ? step : null;
}

export function sampleRow(b: BatchState, s: RequestState, c: ChoiceState, row: number): SampleRequest {
  const sample: SampleRequest = { slot: c.seq!.row, outputLen: c.output.length, row };
  const banned = bannedByBadWords(s.req.badWords, c.output);
  if (banned.length > 0) sample.bannedTokenIds = banned;
  if (c.constraint) {
    const mask = new Int32Array(b.runner.sampler.W);
    if (c.constraint.fillNextTokenBitmask(mask)) sample.grammarBitmask = mask;
  }
  return sample;
}

export function planDecode(b: BatchState): PlannedStep | null {
  const step: PlannedStep = { rows: [], samples: [], owners: [], promptLogprobs: null, copiesAfter: [] };
  const entries: Array<{ s: RequestState; seq: Sequence; owner: RowOwner; choice: ChoiceState | null }> = [];
  for (const s of b.active) {
    if (s.phase !== 'decode' || s.cancelled) continue;
    if (s.beam) {
      (b.beamSeqs.get(s) ?? []).forEach((seq, beam) => entries.push({ s, seq, owner: { kind: 'beam', req: s, beam }, choice: null }));
      continue;
    }
    for (const c of s.choices) {
      if (c.finished || c.preempted || !c.seq || c.seq.computed !== c.seq.length - 1) continue;
      entries.push({ s, seq: c.seq, owner: { kind: 'decode', req: s, choice: c }, choice: c });
    }
  }
  for (const e of entries) {
    while (!e.seq.reserve(b.mgr, e.seq.computed + 1)) {
      if (!preemptOne(b)) {
        if (e.s.beam)
          b.fail(e.s, new Error('The KV cache ran out of memory during beam search; retry with a smaller width or fewer tokens.'));
        break;
      }
    }
  }
  // Sampler rows (and tokens) left for drafts once every entry has its own.
  let spare = Math.min(b.runner.limits.maxBatch, b.runner.limits.maxTokens) - entries.length;
  for (const e of entries) {
    if (
      e.s.phase !== 'decode' ||
      (e.choice && (e.choice.preempted || e.choice.finished)) ||
      e.seq.blocks.length * KV_BLOCK <= e.seq.computed
    )
      continue;
    const at = step.rows.length;
    const last = e.seq.tokens[e.seq.length - 1];
    const sample = e.choice
      ? sampleRow(b, e.s, e.choice, at)
      : { slot: e.seq.row, outputLen: e.s.beam!.steps, row: at, updateCounts: false };
    const draft =
      e.choice && b.jumpForward && spare > 0 && canJumpForward(e.choice)
        ? planDraft(e.s, e.choice, sample, { rows: spare, maxModelLen: b.maxModelLen, words: b.runner.sampler.W, mgr: b.mgr })
        : null;
    if (draft && e.owner.kind === 'decode') {
      spare -= draft.tokens.length;
      step.rows.push({ seq: e.seq.row, pos: e.seq.computed, tokens: [last, ...draft.tokens], adapterSlot: e.s.adapterSlot });
      step.owners.push({ ...e.owner, draft: draft.tokens });
      step.samples.push(...draft.samples);
    } else {
      step.rows.push({ seq: e.seq.row, pos: e.seq.computed, tokens: [last], adapterSlot: e.s.adapterSlot });
      step.owners.push(e.owner);
      step.samples.push(sample);
    }
    // The draft's positions advance as its tokens are taken (jump-forward.ts applyDraft).
    e.seq.advance(b.mgr, 1);
  }
  return step.rows.length > 0 ? step : null;
}

/**
 * The decode step after `prev`, planned before prev's tokens are known (pipelining: scheduler.ts
 * decides when that is safe): the same choices in the same order, one position further, their
 * input ids copied on the GPU from prev's samples. Null when a sequence needs a block and none is
 * free (no preemption on speculation).
 */
export function planContinuation(b: BatchState, prev: PlannedStep): PlannedStep | null {
  const step: PlannedStep = { rows: [], samples: [], owners: [], promptLogprobs: null, copiesAfter: [] };
  for (const o of prev.owners) {
    if (o.kind !== 'decode') return null;
    if (!o.choice.seq!.reserve(b.mgr, o.choice.seq!.computed + 1)) return null;
  }
  prev.owners.forEach((o, i) => {
    if (o.kind !== 'decode') return;
    const seq = o.choice.seq!;
    const at = step.rows.length;
    step.rows.push({ seq: seq.row, pos: seq.computed, tokens: [0], adapterSlot: o.req.adapterSlot });
    step.owners.push(o);
    // One token past prev's (whose result may or may not be applied yet). Bad words are all single
    // tokens here (the scheduler checks), so the bans do not depend on the output.
    const sample: SampleRequest = { slot: seq.row, outputLen: prev.samples[i].outputLen + 1, row: at };
    const banned = bannedByBadWords(o.req.req.badWords, []);
    if (banned.length > 0) sample.bannedTokenIds = banned;
    step.samples.push(sample);
    seq.advance(b.mgr, 1);
  });
  return step;
}

/** Frees the blocks of the newest preemptable sequence (beams are never preempted). False if none. */
export function preemptOne(b: BatchState): boolean {
  const order = [...b.active].sort((a, b) => b.admitOrder - a.admitOrder);
  for (const s of order) {
    if (s.beam) continue;
    if (s.phase === 'prefill' && s.promptSeq && s.promptSeq.blocks.length > 0) {
      s.promptSeq.releaseBlocks(b.mgr);
      s.cachedTokens = 0;
      b.stats.preemptions++;
      return true;
    }
    for (const c of [...s.choices].reverse()) {
      if (c.finished || c.preempted || !c.seq || c.seq.blocks.length === 0) continue;
      c.seq.releaseBlocks(b.mgr);
      c.preempted = true;
      b.stats.preemptions++;
      return true;
    }
  }
  return false;
}
