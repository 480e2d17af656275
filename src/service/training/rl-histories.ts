/**
 * An RL trajectory's histories as token sequences: the main `messages_and_choices` and every
 * `additional_histories` entry, each cut after its last trainable Choice (a Choice carrying
 * logprobs; docs/reference/art-compat.md §2, §3.2), trained on exactly the context each Choice was sampled in
 * (issue 16).
 *
 * Per trainable Choice, the sequence is its prompt followed by its sampled ids:
 * - the prompt is the Choice's `prompt_token_ids` when it carries them (vLLM `return_token_ids`,
 *   copied in by ART's era-d client), else what chat completions would prefill for the messages
 *   before it: the same rendering (service/chat/prompt.ts `buildPrompt`) with the trajectory's
 *   tools and chat completions' defaults (a generation prompt, no template kwargs). Re-rendering
 *   the whole conversation instead would put a Qwen3 reply after the `<think>\n\n</think>\n\n`
 *   its template writes into a final assistant turn, a context it was never sampled in;
 * - the sampled ids are its `token_ids`, else its `token_id:<id>` logprob tokens, else its
 *   vocabulary-string logprob tokens (transformers' `convert_tokens_to_ids`), else, as a last
 *   resort, the logprob tokens' text re-encoded: a Choice whose text does not re-encode to one id
 *   per logprob entry, each decoding to that entry, is counted as not reproduced exactly.
 * Consecutive Choices share one sequence while each prompt extends what came before (a multi-turn
 * rollout); otherwise a new sequence starts (a template that rewrites earlier turns, e.g. Qwen3
 * dropping past reasoning). Requests that used `chat_template_kwargs`, `continue_final_message` or
 * their own `chat_template` are reproduced only through `prompt_token_ids`.
 *
 * A plain assistant message (or a Choice without logprobs) trained with
 * allow_training_without_logprobs was never sampled: it is a target rendered by the template as it
 * is (conversation-tokens.ts), after the same context.
 *
 * Not here: advantages, weights and packing (rl-steps.ts), the template splice (conversation-tokens.ts).
 */
import type { ChatMessage } from '../../engine/model/text/chat-template';
import { ChatRequestError } from '../chat/errors';
import { buildPrompt, toolForTemplate, type PromptModel } from '../chat/prompt';
import type { ChatTool } from '../chat/request';
import { tokenizeConversation, type TokenizedConversation, type Turn } from './conversation-tokens';

type Json = Record<string, unknown>;

/** What RL tokenisation needs of the served model: chat completions' prompt model and its end tokens. */
export interface SamplingModel extends PromptModel {
  /** Ids that end an assistant turn (ServedModel.eosTokenIds). */
  eosTokenIds: readonly number[];
}

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

/** Ids of a model's vocabulary, or null when `value` is not such a list. */
function tokenIds(value: unknown, vocabSize: number): number[] | null {
  if (!Array.isArray(value) || !value.every((id) => Number.isInteger(id) && id >= 0)) return null;
  const outside = value.find((id) => id >= vocabSize);
  if (outside !== undefined)
    throw new TrajectoryTokenError(`Token id ${outside} is outside this model's vocabulary of ${vocabSize} tokens.`);
  return value as number[];
}

export interface SampledTokens {
  tokens: number[];
  /** logprobs[i] belongs to tokens[i]; NaN when unknown. */
  logprobs: number[];
  /** False when the ids were re-encoded from text that does not give back the sampled tokens. */
  exact: boolean;
}

/** The sampled ids and their logprobs of a trainable Choice (see the header for the order of sources). */
export function choiceTokens(choice: Json, tok: PromptModel['tokenizer']): SampledTokens {
  const entries = logprobEntries(choice) ?? [];
  const logprobs = entries.map((e) => Number(e.logprob));
  const ids = tokenIds(choice.token_ids, tok.vocabSize);
  if (ids && ids.length > 0) {
    return { tokens: ids, logprobs: entries.length === ids.length ? logprobs : ids.map(() => NaN), exact: true };
  }
  const texts = entries.map((e) => String(e.token));
  const looked = texts.map((token) => {
    const m = TOKEN_ID.exec(token);
    return m ? Number(m[1]) : tok.tokenToId(token);
  });
  if (looked.every((id): id is number => id !== undefined)) {
    tokenIds(looked, tok.vocabSize);
    return { tokens: looked, logprobs, exact: true };
  }
  // Last resort: decoded logprob tokens (return_tokens_as_token_ids off) re-encoded as one text.
  const tokens = tok.encode(texts.join(''), { addSpecialTokens: false });
  const aligned = tokens.length === texts.length;
  return {
    tokens,
    logprobs: aligned ? logprobs : tokens.map(() => NaN),
    exact: aligned && tokens.every((id, i) => tok.tokenText(id) === texts[i]),
  };
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

export interface TokenizedHistory {
  /** Usually one; empty when nothing in the history is trainable. */
  sequences: TokenizedConversation[];
  /** Trainable Choices whose sampled tokens could not be recovered exactly (re-encoded text). */
  notReproduced: number;
}

function isTrainable(item: unknown, opts: HistoryOptions): boolean {
  if (isTrainableChoice(item)) return true;
  if (!opts.trainWithoutLogprobs) return false;
  return isChoice(item) || (typeof item === 'object' && item !== null && (item as Json).role === 'assistant');
}

const asMessage = (item: unknown): ChatMessage => (isChoice(item) ? choiceMessage(item) : (item as ChatMessage));

/** The history's token sequences, one prompt + completion per trained turn, appended while prompts extend. */
export function tokenizeHistory(history: HistoryInput, model: SamplingModel, opts: HistoryOptions): TokenizedHistory {
  const items = history.messages_and_choices;
  const out: TokenizedHistory = { sequences: [], notReproduced: 0 };
  const tools = templateTools(history.tools);
  let cur: TokenizedConversation | null = null;
  items.forEach((item, k) => {
    if (!isTrainable(item, opts)) return;
    const before = items.slice(0, k).map(asMessage);
    let prompt: number[];
    let completion: SampledTokens;
    if (isTrainableChoice(item)) {
      completion = choiceTokens(item as Json, model.tokenizer);
      if (!completion.exact) out.notReproduced++;
      prompt = tokenIds((item as Json).prompt_token_ids, model.tokenizer.vocabSize) ?? samplingPrompt(before, tools, model, k);
    } else {
      // Never sampled: the template's own rendering of the turn after the same context.
      const turns: Turn[] = [
        ...before.map((message): Turn => ({ kind: 'context', message })),
        { kind: 'target', message: asMessage(item) },
      ];
      const template = model.chatTemplates.forRequest({ hasTools: (tools?.length ?? 0) > 0 });
      const seq = tokenizeConversation(turns, tools?.map(toolForTemplate) ?? null, {
        tokenizer: model.tokenizer,
        template,
        eosTokenIds: model.eosTokenIds,
      });
      if (!seq) return;
      const start = seq.trainable.indexOf(1);
      prompt = seq.tokens.slice(0, start);
      completion = { tokens: seq.tokens.slice(start), logprobs: seq.logprobs.slice(start), exact: true };
    }
    if (prompt.length === 0) throw new TrajectoryTokenError(`messages_and_choices[${k}] has an empty prompt: nothing precedes its tokens.`);
    const extends_ = cur !== null && prompt.length >= cur.tokens.length && cur.tokens.every((id, i) => prompt[i] === id);
    if (!extends_) {
      cur = { tokens: [], trainable: [], logprobs: [] };
      out.sequences.push(cur);
    }
    const c = cur!;
    for (const id of prompt.slice(c.tokens.length)) {
      c.tokens.push(id);
      c.trainable.push(0);
      c.logprobs.push(NaN);
    }
    completion.tokens.forEach((id, i) => {
      c.tokens.push(id);
      c.trainable.push(1);
      c.logprobs.push(completion.logprobs[i]);
    });
  });
  return out;
}

/** The trajectory's tools as chat completions received them; anything else cannot have been sampled with. */
function templateTools(tools: unknown[] | null | undefined): ChatTool[] | null {
  if (tools == null || tools.length === 0) return null;
  tools.forEach((tool, i) => {
    const fn = (tool as Json | null)?.function as Json | undefined;
    if (typeof fn !== 'object' || fn === null || typeof fn.name !== 'string') {
      throw new TrajectoryTokenError(`tools[${i}] is not a function tool ({"type": "function", "function": {"name": ...}}).`);
    }
  });
  return tools as ChatTool[];
}

/** What chat completions prefilled for these messages (buildPrompt with the request's defaults). */
function samplingPrompt(messages: ChatMessage[], tools: ChatTool[] | null, model: SamplingModel, k: number): number[] {
  try {
    return buildPrompt({ messages, ...(tools ? { tools } : {}) }, model).tokenIds;
  } catch (e) {
    if (e instanceof ChatRequestError)
      throw new TrajectoryTokenError(`messages_and_choices[${k}]: its prompt cannot be rendered: ${e.message}`);
    throw e;
  }
}
