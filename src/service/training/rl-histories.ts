/**
 * An RL trajectory's histories as token sequences: the main `messages_and_choices` and every
 * `additional_histories` entry, each cut after its last trainable Choice (a Choice carrying
 * logprobs; art-compat.md §2, §3.2), with the sampled token ids spliced in exactly.
 *
 * A Choice's sampled ids come from its `token_ids` (vLLM `return_token_ids`) when present, else
 * from its logprob entries: `token_id:<id>` tokens (what Hearth and ART's vLLM return), or a
 * vocabulary string looked up in the tokenizer (transformers' `convert_tokens_to_ids`). When every
 * trainable Choice of a history also carries `prompt_token_ids` (ART's era-d client copies them
 * in), the sequence is built from those ids directly, append-only, without the template: a new
 * sequence starts when a prompt does not extend what came before.
 *
 * Not here: advantages, weights and packing (rl-steps.ts), the splice itself (conversation-tokens.ts).
 */
import type { ChatMessage } from '../../engine/model/chat-template';
import { tokenizeConversation, type ConversationTokenizer, type TokenizedConversation, type Turn } from './conversation-tokens';

type Json = Record<string, unknown>;

export class TrajectoryTokenError extends Error {
  override name = 'TrajectoryTokenError';
}

/** A Choice object (has `message` / `finish_reason`) as opposed to a message dict (has `role`). */
export function isChoice(item: unknown): item is Json {
  return typeof item === 'object' && item !== null && !('role' in item) && 'message' in item;
}

function logprobEntries(choice: Json): Json[] | null {
  const content = (choice.logprobs as Json | null | undefined)?.content;
  return Array.isArray(content) && content.length > 0 ? (content as Json[]) : null;
}

/** Only Choices that carry logprobs are trained on (ART). */
export function isTrainableChoice(item: unknown): boolean {
  return isChoice(item) && logprobEntries(item) !== null;
}

const TOKEN_ID = /^token_id:(\d+)$/;

/** The sampled ids and their logprobs of a trainable Choice. */
export function choiceTokens(choice: Json, tok: ConversationTokenizer['tokenizer']): { tokens: number[]; logprobs: number[] } {
  const entries = logprobEntries(choice) ?? [];
  const ids = choice.token_ids;
  if (Array.isArray(ids) && ids.length > 0 && ids.every((id) => Number.isInteger(id) && id >= 0)) {
    const logprobs = entries.length === ids.length ? entries.map((e) => Number(e.logprob)) : ids.map(() => NaN);
    return { tokens: ids as number[], logprobs };
  }
  const tokens = entries.map((e, i) => {
    const token = String(e.token);
    const m = TOKEN_ID.exec(token);
    const id = m ? Number(m[1]) : tok.tokenToId(token);
    if (id === undefined || id >= tok.vocabSize) {
      throw new TrajectoryTokenError(
        `logprobs.content[${i}].token ${JSON.stringify(token)} is not a token of this model: ` +
          'send logprobs with tokens as "token_id:<id>" (return_tokens_as_token_ids) or the Choice\'s token_ids.',
      );
    }
    return id;
  });
  return { tokens, logprobs: entries.map((e) => Number(e.logprob)) };
}

/** The assistant message a Choice stands for in a conversation (ART `get_messages`). */
export function choiceMessage(choice: Json): ChatMessage {
  const message = (choice.message ?? {}) as Json;
  const out: ChatMessage = { role: 'assistant', content: (message.content as string | null) ?? '' };
  if (Array.isArray(message.tool_calls) && message.tool_calls.length > 0) out.tool_calls = message.tool_calls as ChatMessage['tool_calls'];
  return out;
}

export interface HistoryInput {
  messages_and_choices: unknown[];
  tools?: unknown[] | null;
}

export interface HistoryOptions {
  /** era-d allow_training_without_logprobs: plain assistant messages and Choices without logprobs are trained too. */
  trainWithoutLogprobs: boolean;
}

function isTrainable(item: unknown, opts: HistoryOptions): boolean {
  if (isTrainableChoice(item)) return true;
  if (!opts.trainWithoutLogprobs) return false;
  return isChoice(item) || (typeof item === 'object' && item !== null && (item as Json).role === 'assistant');
}

/** The history's token sequences (usually one); empty when nothing in it is trainable. */
export function tokenizeHistory(history: HistoryInput, t: ConversationTokenizer, opts: HistoryOptions): TokenizedConversation[] {
  const items = history.messages_and_choices;
  const last = items.findLastIndex((item) => isTrainable(item, opts));
  if (last < 0) return [];
  const kept = items.slice(0, last + 1);
  const trainable = kept.filter(isTrainableChoice) as Json[];
  if (trainable.length > 0 && trainable.every((c) => Array.isArray(c.prompt_token_ids) && Array.isArray(c.token_ids))) {
    if (!opts.trainWithoutLogprobs || kept.every((item) => !isTrainable(item, opts) || isTrainableChoice(item))) {
      return appendOnlySequences(trainable, t);
    }
  }
  const turns: Turn[] = kept.map((item): Turn => {
    if (isTrainableChoice(item)) {
      const { tokens, logprobs } = choiceTokens(item as Json, t.tokenizer);
      return { kind: 'sampled', message: choiceMessage(item as Json), tokens, logprobs };
    }
    const message = isChoice(item) ? choiceMessage(item) : (item as ChatMessage);
    return isTrainable(item, opts) ? { kind: 'target', message } : { kind: 'context', message };
  });
  const seq = tokenizeConversation(turns, history.tools ?? null, t);
  return seq ? [seq] : [];
}

/** era-d: prompt_token_ids + token_ids per Choice, appended while each prompt extends the sequence. */
function appendOnlySequences(choices: Json[], t: ConversationTokenizer): TokenizedConversation[] {
  const out: TokenizedConversation[] = [];
  let cur: TokenizedConversation | null = null;
  for (const choice of choices) {
    const prompt = choice.prompt_token_ids as number[];
    const { tokens, logprobs } = choiceTokens(choice, t.tokenizer);
    const extends_ = cur !== null && prompt.length >= cur.tokens.length && cur.tokens.every((id, i) => prompt[i] === id);
    if (!extends_) {
      cur = { tokens: [], trainable: [], logprobs: [] };
      out.push(cur);
    }
    const c = cur!;
    for (const id of prompt.slice(c.tokens.length)) {
      c.tokens.push(id);
      c.trainable.push(0);
      c.logprobs.push(NaN);
    }
    tokens.forEach((id, i) => {
      c.tokens.push(id);
      c.trainable.push(1);
      c.logprobs.push(logprobs[i]);
    });
  }
  for (const seq of out) {
    if (seq.trainable[0] === 1) throw new TrajectoryTokenError('A Choice has empty prompt_token_ids: nothing precedes its tokens.');
  }
  return out;
}
