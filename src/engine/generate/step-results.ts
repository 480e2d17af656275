/**
 * Applying a step's results (scheduler.ts runs the step): prompt logprobs, the `prefilled` event
 * when a prompt's last chunk ran, every sampled token through its choice's rules (grammar,
 * events, stop / length), and beam selection with the forks, moves and frees of beam sequences
 * that follow from it. A request whose handling throws fails alone.
 *
 * Not here: planning (step-planner.ts), per-token rules (request-state.ts).
 */
import type { SamplerRowOutput } from '../kernels/sampler';
import { applyDraft } from './jump-forward';
import type { StepResult } from './step-spec';
import type { ChoiceState, RequestState } from './request-state';
import type { Sequence } from './sequence';
import { preemptOne, type BatchState, type PlannedStep } from './step-planner';
import type { PromptLogprob } from './types';

/** Applies a submitted step's readback to the requests in it. */
export function applyStepResults(b: BatchState, step: PlannedStep, result: StepResult): void {
  if (step.promptLogprobs && result.promptLogprobs) {
    const pl = step.promptLogprobs;
    result.promptLogprobs.forEach((p, i) => {
      const entry: PromptLogprob = { tokenId: pl.targets[i], logprob: p.logprob, rank: p.rank, top: p.top };
      pl.req.promptLogprobs![pl.position + i + 1] = entry;
    });
  }
  // Each owner's first sampler row: a finishing prompt samples once per choice (once for beams).
  const offsets: number[] = [];
  let k = 0;
  for (const o of step.owners) {
    offsets.push(k);
    if (o.kind === 'prompt') k += o.finishing ? (o.req.beam ? 1 : o.req.req.n) : 0;
    else if (o.kind === 'recompute') k += o.finishing ? 1 : 0;
    else if (o.kind === 'decode') k += 1 + (o.draft?.length ?? 0);
    else k++;
  }
  const beamCandidates = new Map<RequestState, SamplerRowOutput[]>();
  step.owners.forEach((o, i) => {
    const s = o.req;
    const at = offsets[i];
    if (s.phase === 'done') return;
    try {
      if (o.kind === 'prompt') {
        if (!o.finishing) return;
        s.stream.push({ type: 'prefilled', promptTokens: s.prompt.length, cachedTokens: s.cachedTokens, promptLogprobs: s.promptLogprobs });
        s.phase = 'decode';
        if (s.beam) {
          beamCandidates.set(s, [result.sampled[at]]);
          b.beamSeqs.set(s, [s.promptSeq!]);
        } else s.choices.forEach((c, j) => onToken(b, s, c, result.sampled[at + j]));
        s.promptSeq = null;
      } else if (o.kind === 'recompute') {
        if (!o.finishing) return;
        o.choice.preempted = false;
        onToken(b, s, o.choice, result.sampled[at]);
      } else if (o.kind === 'decode') {
        if (o.draft)
          applyDraft(s, o.choice, o.draft, result.sampled.slice(at, at + 1 + o.draft.length), b.mgr, (out) => onToken(b, s, o.choice, out));
        else onToken(b, s, o.choice, result.sampled[at]);
      } else {
        const list = beamCandidates.get(s) ?? [];
        list[o.beam] = result.sampled[at];
        beamCandidates.set(s, list);
      }
    } catch (e) {
      b.fail(s, e);
    }
  });
  for (const [s, outputs] of beamCandidates) {
    if (s.phase === 'done') continue;
    try {
      beamStep(b, s, outputs);
    } catch (e) {
      b.fail(s, e);
    }
  }
}

/** A sampled token for a choice: output, grammar, events, finish. */
export function onToken(b: BatchState, s: RequestState, c: ChoiceState, out: SamplerRowOutput): void {
  if (c.finished || s.cancelled) return; // stopped while the step ran: the token is dropped
  const seq = c.seq!;
  c.output.push(out.token);
  seq.tokens.push(out.token);
  if (c.constraint && !c.constraint.acceptToken(out.token)) {
    throw new Error(`The grammar of choice ${c.index} rejected token ${out.token}, which its own bitmask allowed.`);
  }
  s.emitTokens(c.index, [{ id: out.token, logprob: out.logprob, topLogprobs: out.top }]);
  const finish = c.finishAfter(out.token, s.req.maxTokens, seq.length, b.maxModelLen);
  if (finish) {
    c.finished = true;
    s.emitFinished(c.index, finish);
  }
}

/** Beam selection after a step, then the sequences forked, moved or freed to match. */
export function beamStep(b: BatchState, s: RequestState, outputs: SamplerRowOutput[]): void {
  const beam = s.beam!;
  const seqs = b.beamSeqs.get(s)!;
  const ext = beam.step(outputs.map((o) => o.top));
  const taken = new Array<boolean>(seqs.length).fill(false);
  const next: Sequence[] = [];
  const free = s.rows.filter((r) => !seqs.some((q) => q.row === r));
  // Parents without children give their rows back first, so forks can use them.
  seqs.forEach((q, i) => {
    if (!ext.some((e) => e.parent === i)) {
      q.releaseBlocks(b.mgr);
      free.push(q.row);
    }
  });
  for (const e of ext) {
    const parent = seqs[e.parent];
    if (!taken[e.parent]) {
      taken[e.parent] = true;
      next.push(parent);
      continue;
    }
    const row = free.pop()!;
    let fork = parent.fork(b.mgr, row);
    while (!fork && preemptOne(b)) fork = parent.fork(b.mgr, row);
    if (!fork) throw new Error('The KV cache ran out of memory during beam search; retry with a smaller width or fewer tokens.');
    b.pendingCopies.push(...fork.copies);
    next.push(fork.child);
  }
  // Children were forked from the parents' state before this step's tokens: append them now.
  ext.forEach((e, i) => next[i].tokens.push(e.beam.tokens[e.beam.tokens.length - 1].id));
  b.beamSeqs.set(s, next);
  if (next.length === 0 || beam.steps >= s.req.maxTokens) finishBeams(s);
}

export function finishBeams(s: RequestState): void {
  const best = s.beam!.best();
  best.forEach((b, i) => {
    s.emitTokens(i, b.tokens);
    s.emitFinished(i, { reason: b.finished ? 'stop' : 'length', stopTokenId: null }, b.cumulativeLogprob);
  });
  for (const c of s.choices) c.finished = true;
}
