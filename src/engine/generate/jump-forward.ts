/**
 * Jump-forward decoding: when a choice's grammar forces the next tokens (a JSON key, `": `, the
 * fixed envelope of a tool call), its decode row carries them as a draft, [last token, d0 .. dk-1],
 * one multi-token row like a small prefill chunk, instead of one token per step.
 *
 * The draft is verified, not trusted. The step samples every position of the row with the mask,
 * bans, min_tokens and noise counter that token-by-token decoding would use there: position i
 * (after d0 .. di-1) is sampled as output token `output.length + i`. The results take d0, d1, ...
 * while the sampled token equals the draft's, and the first sample that differs (or the one after
 * the whole draft) is taken as it is. Every emitted token is therefore the sample token-by-token
 * decoding would draw at that position: at temperature 0 the same tokens, with a seed the same
 * noise and so the same tokens (up to f32 differences between the multi-token and the decode
 * graph), and its logprob and top logprobs are the model's on that row. Forcing tokens without
 * this check would make the output depend on how the draft was tokenised: the grammar allows every
 * token that is a prefix of the forced text, and the model may prefer another split than the
 * tokenizer's. The draft is the tokenizer's canonical encoding (grammar-matcher.ts), so when the
 * model agrees, later turns tokenise the output the same way.
 *
 * Only for choices without repetition, frequency or presence penalties: the sampler counts a
 * row's token into its slot's output counts after the step, so the later positions of a draft
 * would not see the earlier ones' (and the draft's rows do not count theirs).
 *
 * Not here: where the draft comes from (TokenConstraint.forcedTokens), the step (model-runner.ts).
 */
import type { KvBlockManager } from '../model/kv/block-manager';
import type { SampleRequest } from './step-spec';
import { bannedByBadWords, type ChoiceState, type RequestState } from './request-state';
import type { SamplerRowOutput } from '../kernels/sampler';

/** What planning a draft may use beyond the row's own token and sample. */
export interface DraftBudget {
  /** Extra sampler rows (and tokens) the step has room for. */
  rows: number;
  maxModelLen: number;
  /** Bitmask words per row (the sampler's W). */
  words: number;
  mgr: KvBlockManager;
}

/** The draft of a choice whose row starts at `at` in the step: its tokens and one sample per position of the row. */
export interface Draft {
  tokens: number[];
  samples: SampleRequest[];
}

/** Whether a choice may decode drafts at all. */
export function canJumpForward(c: ChoiceState): boolean {
  const p = c.sampling;
  const k = c.constraint;
  return (
    !!k?.forcedTokens &&
    !!k.rollback &&
    (p.repetitionPenalty ?? 1) === 1 &&
    (p.frequencyPenalty ?? 0) === 0 &&
    (p.presencePenalty ?? 0) === 0
  );
}

/**
 * The draft for a choice's next row (after its sequence reserved the row's own position), or null
 * when the grammar forces nothing. `first` is the sample of the row's own position (sampleRow's).
 */
export function planDraft(s: RequestState, c: ChoiceState, first: SampleRequest, budget: DraftBudget): Draft | null {
  const seq = c.seq!;
  const constraint = c.constraint!;
  // Each drafted token may be emitted: stay within max_tokens and the context (one more token
  // than the draft is emitted when all of it is taken).
  const room = Math.min(budget.rows, s.req.maxTokens - c.output.length - 1, budget.maxModelLen - seq.length - 1, seq.room(budget.mgr) - 1);
  if (room <= 0) return null;
  let tokens = constraint.forcedTokens!().slice(0, room);
  if (tokens.length === 0) return null;
  const samples: SampleRequest[] = [{ ...first, at: 0 }];
  let accepted = 0;
  try {
    for (const t of tokens) {
      // Positions past a token the grammar refuses, or after which it has ended, are not drafted.
      if (!constraint.acceptToken(t)) break;
      accepted++;
      if (constraint.isTerminated()) break;
      // The counts stay as they are: the sampler allows one counting row per slot, and they only
      // feed penalties, which a drafting choice does not have.
      const sample: SampleRequest = {
        slot: first.slot,
        outputLen: first.outputLen + accepted,
        row: first.row,
        at: accepted,
        updateCounts: false,
      };
      const banned = bannedByBadWords(s.req.badWords, [...c.output, ...tokens.slice(0, accepted)]);
      if (banned.length > 0) sample.bannedTokenIds = banned;
      const mask = new Int32Array(budget.words);
      if (constraint.fillNextTokenBitmask(mask)) sample.grammarBitmask = mask;
      samples.push(sample);
    }
  } finally {
    constraint.rollback!(accepted);
  }
  tokens = tokens.slice(0, samples.length - 1);
  if (tokens.length === 0) return null;
  if (!seq.reserve(budget.mgr, seq.computed + 1 + tokens.length)) return null;
  return { tokens, samples };
}

/**
 * Applies a drafted row's samples: each one through `onToken` (output, grammar, events, finish),
 * the draft's tokens kept while the samples agree with them. The cache holds the row's positions:
 * each agreeing token's K/V is the one the step wrote, so the sequence advances over it; the rest
 * of the row is overwritten by later steps.
 */
export function applyDraft(
  s: RequestState,
  c: ChoiceState,
  draft: readonly number[],
  outputs: readonly SamplerRowOutput[],
  mgr: KvBlockManager,
  onToken: (out: SamplerRowOutput) => void,
): void {
  for (let i = 0; i <= draft.length; i++) {
    if (c.finished || s.cancelled) return;
    onToken(outputs[i]);
    if (i === draft.length || outputs[i].token !== draft[i] || c.finished) return;
    c.seq!.advance(mgr, 1);
  }
}
