/**
 * Beam search of width n with vLLM's semantics (`EngineClient.beam_search`, v0.11):
 * - every step, each live beam proposes its top 2n next tokens by raw logprob; a candidate that is
 *   EOS (unless ignore_eos) completes its beam, every other candidate extends it;
 * - the extended candidates are sorted by score and the best n become the live beams;
 * - after max_tokens steps (or when no beam is live) the completed beams and the live ones are
 *   sorted by score and the best n are returned, best first;
 * - score = cumulative logprob / (sequence length) ^ length_penalty, the length counting the prompt
 *   and the generated tokens but not a final EOS (`get_beam_search_score`).
 * Sampling parameters other than the EOS ids and ignore_eos do not apply (vLLM samples beams
 * greedily and reads the 2n candidates from the raw logprobs, as here); stop token ids, bad words,
 * penalties and grammars are not part of vLLM's beam search either.
 *
 * Pure bookkeeping: which parent each new beam extends, so the scheduler can fork sequences.
 * Not here: GPU steps and sequence forks (scheduler.ts).
 */
import type { SamplingParams } from '../sampling/sampling-params';
import type { SampledToken, TopLogprob } from './types';

export interface Beam {
  tokens: SampledToken[];
  cumulativeLogprob: number;
  /** Ended by EOS. */
  finished: boolean;
}

/** One extension chosen for the next step: the parent beam (index in `live`) and the token. */
export interface BeamExtension {
  parent: number;
  beam: Beam;
}

export class BeamSearch {
  /** Live beams, in the order of the last step's selection (the scheduler keeps their sequences aligned). */
  live: Beam[] = [{ tokens: [], cumulativeLogprob: 0, finished: false }];
  readonly completed: Beam[] = [];
  steps = 0;

  constructor(
    readonly width: number,
    readonly lengthPenalty: number,
    readonly promptLength: number,
    private readonly eos: ReadonlySet<number>,
    /** top_logprobs of the request: each token carries this many of its step's candidates. */
    private readonly topLogprobs: number,
  ) {}

  score(b: Beam): number {
    let len = this.promptLength + b.tokens.length;
    if (b.finished) len -= 1;
    return b.cumulativeLogprob / len ** this.lengthPenalty;
  }

  /**
   * One step: `candidates[i]` are live beam i's top 2n tokens by raw logprob (best first). Returns
   * the new live beams with their parents (at most width), and records completed ones.
   */
  step(candidates: readonly (readonly TopLogprob[])[]): BeamExtension[] {
    if (candidates.length !== this.live.length)
      throw new Error(`BeamSearch: ${candidates.length} candidate lists for ${this.live.length} beams`);
    const extended: BeamExtension[] = [];
    candidates.forEach((list, parent) => {
      const base = this.live[parent];
      const top = list.slice(0, this.topLogprobs);
      for (const c of list) {
        const beam: Beam = {
          tokens: [...base.tokens, { id: c.id, logprob: c.logprob, topLogprobs: top }],
          cumulativeLogprob: base.cumulativeLogprob + c.logprob,
          finished: this.eos.has(c.id),
        };
        if (beam.finished) this.completed.push(beam);
        else extended.push({ parent, beam });
      }
    });
    // Stable sort: ties keep the candidates' order (parent order, then rank), as Python's sorted does.
    extended.sort((a, b) => this.score(b.beam) - this.score(a.beam));
    const next = extended.slice(0, this.width);
    this.live = next.map((e) => e.beam);
    this.steps++;
    return next;
  }

  /** The best `width` beams of all completed and live ones, best first. */
  best(): Beam[] {
    const all = [...this.completed, ...this.live];
    return all
      .map((b, i) => ({ b, i, s: this.score(b) }))
      .sort((x, y) => y.s - x.s || x.i - y.i)
      .slice(0, this.width)
      .map((x) => x.b);
  }
}

/** The sampler parameters of beam rows: greedy, with the top 2n by raw logprob in rank order. */
export function beamParams(width: number, vocabSize: number): SamplingParams {
  return { temperature: 0, topLogprobs: Math.min(2 * width, vocabSize), topLogprobsOrder: 'rank' };
}
