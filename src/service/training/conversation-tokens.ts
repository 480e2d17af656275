/**
 * Turning one conversation into training tokens with the model's own chat template: the text
 * between turns comes from the template, and each trained assistant turn is spliced in as tokens
 * (RL: the exact ids the sampler produced, with their logprobs; SFT: the tokenised content), so
 * the trainer sees what the model saw and produced, never a re-tokenisation of sampled text.
 *
 * How (ART's sentinel method, art-compat.md §3.2): the conversation is rendered once with every
 * trained turn's content replaced by a unique marker string; the text is split at the markers
 * and each piece tokenised alone (as the chat service tokenises a prompt before generating).
 * - A sampled turn's tokens already hold everything the model generated (content, tool calls,
 *   usually the end token), so its message is rendered without tool_calls; when the template's
 *   next token repeats the sampled turn's last token (the end token), the duplicate is dropped.
 *   When the sampled turn starts with an added token (e.g. `<think>`) that the template also
 *   emitted just before the turn, the splice starts at the template's copy (ART's `<think>` rule).
 * - A target turn (SFT, or RL's allow_training_without_logprobs) is rendered as it is (a marker
 *   in place of its content would change templates that test for empty content); its start is
 *   found by rendering once more with only that turn marked. Its content and what the template
 *   writes after it up to and including the first end token (tool calls, the end marker) are
 *   targets.
 * - Everything after the last trained turn is dropped (ART: histories end at their last
 *   trainable Choice; continue_final_message).
 *
 * Not here: reading trajectories or SFT lines (rl-histories.ts, sft-steps.ts), advantages.
 */
import type { ChatMessage, ChatTemplate } from '../../engine/model/chat-template';
import type { ModelTokenizer } from '../../engine/model/tokenizer';

export type Turn =
  /** Rendered by the template, never trained. */
  | { kind: 'context'; message: ChatMessage }
  /** A Choice's sampled tokens, spliced in verbatim; logprobs[i] belongs to tokens[i] (NaN if unknown). */
  | { kind: 'sampled'; message: ChatMessage; tokens: readonly number[]; logprobs: readonly number[] }
  /** An assistant message trained on its tokenised content (and tool calls, end token). */
  | { kind: 'target'; message: ChatMessage };

export interface ConversationTokenizer {
  tokenizer: ModelTokenizer;
  template: ChatTemplate;
  /** Ids that end an assistant turn (ServedModel.eosTokenIds). */
  eosTokenIds: readonly number[];
}

export interface TokenizedConversation {
  tokens: number[];
  /** 1 where the token is a training target. */
  trainable: number[];
  /** The sampler's logprob of each target token; NaN elsewhere and for unknown values. */
  logprobs: number[];
}

/** How far back the `<think>` rule looks for the template's copy of the turn's first token. */
const THINK_LOOKBACK = 8;

let sentinelCounter = 0;

/** Tokens of `turns` rendered with `tools`; null when no turn is trained. */
export function tokenizeConversation(
  turns: readonly Turn[],
  tools: readonly unknown[] | null,
  t: ConversationTokenizer,
): TokenizedConversation | null {
  const lastTrained = turns.findLastIndex((turn) => turn.kind !== 'context');
  if (lastTrained < 0) return null;
  const kept = turns.slice(0, lastTrained + 1);

  // Markers that cannot occur in real text and survive trimming templates.
  const tag = `\u2063hearth-turn-${(sentinelCounter++).toString(36)}-`;
  const marker = (i: number) => `${tag}${i}\u2063`;
  const render = (markTarget: number) =>
    t.template.render({
      messages: kept.map((turn, i): ChatMessage => {
        if (turn.kind === 'context') return turn.message;
        if (turn.kind === 'sampled') {
          const { tool_calls: _sampledHasThem, ...rest } = turn.message;
          return { ...rest, content: marker(i) };
        }
        return i === markTarget ? { ...turn.message, content: marker(i) } : turn.message;
      }),
      tools: tools && tools.length ? tools : null,
      addGenerationPrompt: false,
    });
  const text = render(-1);

  // Where each trained turn sits in `text`: a sampled turn's marker (removed), or the start of a
  // target turn, found as the text before its marker in a rendering that marks only it (the
  // marker itself would change templates that test for empty content).
  const trainedIdx = kept.flatMap((turn, i) => (turn.kind === 'context' ? [] : [i]));
  const cuts: { start: number; end: number }[] = [];
  let from = 0;
  for (const i of trainedIdx) {
    const source = kept[i].kind === 'sampled' ? text : render(i);
    const at = source.indexOf(marker(i));
    const once = at >= 0 && source.indexOf(marker(i), at + 1) < 0;
    if (!once || at < from || (kept[i].kind === 'target' && !text.startsWith(source.slice(0, at)))) {
      throw new Error(`The chat template does not render assistant turn ${i} once and in order, so its tokens cannot be placed.`);
    }
    const end = kept[i].kind === 'sampled' ? at + marker(i).length : at;
    cuts.push({ start: at, end });
    from = end;
  }

  const eos = new Set(t.eosTokenIds);
  const out: TokenizedConversation = { tokens: [], trainable: [], logprobs: [] };
  const push = (ids: readonly number[], train: boolean, logprobs?: readonly number[]) => {
    ids.forEach((id, k) => {
      out.tokens.push(id);
      out.trainable.push(train ? 1 : 0);
      out.logprobs.push(train && logprobs ? logprobs[k] : NaN);
    });
  };
  const encode = (s: string) => t.tokenizer.encode(s, { addSpecialTokens: false });
  // Tokens of text not yet placed (the context before the next turn).
  let carry = encode(text.slice(0, cuts[0].start));
  trainedIdx.forEach((i, n) => {
    const turn = kept[i] as Exclude<Turn, { kind: 'context' }>;
    const next = encode(text.slice(cuts[n].end, n + 1 < cuts.length ? cuts[n + 1].start : text.length));
    let before = carry;
    if (turn.kind === 'sampled') {
      const first = turn.tokens[0];
      if (first !== undefined && t.tokenizer.isAddedToken(first)) {
        const at = before.lastIndexOf(first);
        if (at >= 0 && at >= before.length - THINK_LOOKBACK) before = before.slice(0, at);
      }
      push(before, false);
      push(turn.tokens, true, turn.logprobs);
      const last = turn.tokens[turn.tokens.length - 1];
      carry = last !== undefined && eos.has(last) && next[0] === last ? next.slice(1) : next;
    } else {
      // The turn's content and what the template writes after it (tool calls) up to the end token.
      push(before, false);
      const end = next.findIndex((id) => eos.has(id));
      push(end >= 0 ? next.slice(0, end + 1) : next, true);
      carry = end >= 0 ? next.slice(end + 1) : [];
    }
  });
  // Nothing after the last trained turn is kept.
  while (out.trainable.length && out.trainable[out.trainable.length - 1] === 0) {
    out.tokens.pop();
    out.trainable.pop();
    out.logprobs.pop();
  }
  if (out.trainable[0] === 1) {
    throw new Error('A conversation cannot start with a trained token: nothing precedes it to predict it from.');
  }
  return out;
}

