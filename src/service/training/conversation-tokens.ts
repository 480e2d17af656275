/**
 * Turning one conversation into training tokens with the model's own chat template, for turns
 * that were never sampled (SFT examples, RL's allow_training_without_logprobs targets): the text
 * between turns comes from the template, and each trained assistant turn's tokenised content and
 * what the template writes after it up to its end token are the targets.
 *
 * How (ART's sentinel method, docs/reference/art-compat.md §3.2): a target turn is rendered as it is (a marker in
 * place of its content would change templates that test for empty content); its start is found by
 * rendering once more with only that turn marked, and the text is split there and tokenised piece
 * by piece (as the chat service tokenises a prompt before generating). Its content and what the
 * template writes after it up to and including the first end token (tool calls, the end marker)
 * are targets. Everything after the last trained turn is dropped (ART: histories end at their last
 * trainable turn; continue_final_message).
 *
 * Not here: sampled RL Choices, trained in the context they were sampled in (rl-histories.ts);
 * reading SFT lines (sft-steps.ts), advantages.
 */
import type { ChatMessage, ChatTemplate } from '../../engine/model/text/chat-template';
import type { ModelTokenizer } from '../../engine/model/text/tokenizer';

export type Turn =
  /** Rendered by the template, never trained. */
  | { kind: 'context'; message: ChatMessage }
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
      messages: kept.map((turn, i): ChatMessage => (i === markTarget ? { ...turn.message, content: marker(i) } : turn.message)),
      tools: tools && tools.length ? tools : null,
      addGenerationPrompt: false,
    });
  const text = render(-1);

  // Where each target turn starts in `text`: the text before its marker in a rendering that marks
  // only it (the marker itself would change templates that test for empty content).
  const trainedIdx = kept.flatMap((turn, i) => (turn.kind === 'context' ? [] : [i]));
  const starts: number[] = [];
  let from = 0;
  for (const i of trainedIdx) {
    const source = render(i);
    const at = source.indexOf(marker(i));
    const once = at >= 0 && source.indexOf(marker(i), at + 1) < 0;
    if (!once || at < from || !text.startsWith(source.slice(0, at))) {
      throw new Error(`The chat template does not render assistant turn ${i} once and in order, so its tokens cannot be placed.`);
    }
    starts.push(at);
    from = at;
  }

  const eos = new Set(t.eosTokenIds);
  const out: TokenizedConversation = { tokens: [], trainable: [], logprobs: [] };
  const push = (ids: readonly number[], train: boolean) => {
    for (const id of ids) {
      out.tokens.push(id);
      out.trainable.push(train ? 1 : 0);
      out.logprobs.push(NaN);
    }
  };
  const encode = (s: string) => t.tokenizer.encode(s, { addSpecialTokens: false });
  // Tokens of text not yet placed (the context before the next turn).
  let carry = encode(text.slice(0, starts[0]));
  trainedIdx.forEach((_, n) => {
    const next = encode(text.slice(starts[n], n + 1 < starts.length ? starts[n + 1] : text.length));
    // The turn's content and what the template writes after it (tool calls) up to the end token.
    push(carry, false);
    const end = next.findIndex((id) => eos.has(id));
    push(end >= 0 ? next.slice(0, end + 1) : next, true);
    carry = end >= 0 ? next.slice(end + 1) : [];
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
