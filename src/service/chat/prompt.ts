/**
 * The prompt of a chat request: the conversation rendered by the model's chat template (or the
 * request's `chat_template`) with tools, documents, the generation prompt or the open final
 * message and the template kwargs, tokenised (with `add_special_tokens`), and cut to its last
 * `truncate_prompt_tokens` tokens. Also what the response is built around: the response role
 * (vLLM: "assistant" with a generation prompt, else the last message's role) and the text
 * `echo` prepends.
 *
 * Not here: the template engine (engine/model/text/chat-template.ts), the context-length rule
 * (max-tokens.ts).
 * Reference: docs/reference/vllm-chat.md §2 rows messages, echo, add_generation_prompt, continue_final_message,
 * add_special_tokens, truncate_prompt_tokens, documents, chat_template(_kwargs), §6 "Into the template".
 */
import { ChatTemplateError, type ChatTemplates } from '../../engine/model/text/chat-template';
import { UnembeddedTokenError, type ModelTokenizer } from '../../engine/model/text/tokenizer';
import { ChatRequestError } from './errors';
import type { ChatMessage, ChatRequest, ChatTool } from './request';

export interface ChatPrompt {
  text: string;
  /** After truncation: what the engine prefills and usage.prompt_tokens counts. */
  tokenIds: number[];
  /** The role of the generated message. */
  role: string;
  /** Prepended to every choice's content with `echo` ("" when nothing is echoed). */
  echo: string;
}

export interface PromptModel {
  tokenizer: ModelTokenizer;
  chatTemplates: ChatTemplates;
  maxModelLen: number;
}

/** A tool as pydantic's `model_dump()` hands it to the template: declared fields first, defaults filled. */
export function toolForTemplate(tool: ChatTool): Record<string, unknown> {
  const { type, function: fn, ...extra } = tool;
  const { name, description, parameters, ...fnExtra } = fn;
  return {
    type: type ?? 'function',
    function: { name, description: description ?? null, parameters: parameters ?? null, ...fnExtra },
    ...extra,
  };
}

function contentText(content: ChatMessage['content']): string {
  if (content == null) return '';
  if (typeof content === 'string') return content;
  return content
    .filter((p) => p.type === 'text' && typeof p.text === 'string')
    .map((p) => p.text)
    .join('\n');
}

/**
 * Characters a prompt may have per token of the model's context (issue 26). Tokenising is the
 * one step whose cost grows with the prompt before the context-length rule can refuse it (10 M
 * CJK characters took seconds of the one engine thread, then overflowed the tokenizer library's
 * regex stack, a 500), so a prompt longer than `maxModelLen * 8` characters is refused by its
 * length first. A token of ordinary text is 3 to 5 characters, so a prompt this long holds more
 * tokens than the context in any text but runs of whitespace or repeated characters. The limit
 * applies with `truncate_prompt_tokens` too, since truncation cuts only what was tokenised.
 */
export const PROMPT_CHARS_PER_TOKEN = 8;

/** The most characters a prompt (the messages' text, then the rendered template) may have. */
export function maxPromptChars(maxModelLen: number): number {
  return maxModelLen * PROMPT_CHARS_PER_TOKEN;
}

function ensurePromptChars(chars: number, maxModelLen: number): void {
  const max = maxPromptChars(maxModelLen);
  if (chars <= max) return;
  throw new ChatRequestError(
    `The prompt has ${chars} characters; this model's maximum context length is ${maxModelLen} tokens, so a prompt may have at most ${max} characters (${PROMPT_CHARS_PER_TOKEN} per token), checked before tokenising. Please reduce the length of the input messages.`,
    'messages',
  );
}

/** Characters of the messages' text (content strings and text parts), counted before the template runs. */
function messageChars(messages: readonly ChatMessage[]): number {
  let n = 0;
  for (const m of messages) {
    if (typeof m.content === 'string') n += m.content.length;
    else if (m.content) for (const p of m.content) n += typeof p.text === 'string' ? p.text.length : 0;
  }
  return n;
}

export function buildPrompt(req: ChatRequest, model: PromptModel): ChatPrompt {
  // The messages first, so that the template never copies a prompt that is refused anyway.
  ensurePromptChars(messageChars(req.messages), model.maxModelLen);
  const continueFinal = req.continue_final_message ?? false;
  // An omitted add_generation_prompt yields to continue_final_message (both true is refused in check.ts).
  const addGenerationPrompt = req.add_generation_prompt ?? !continueFinal;
  const tools = req.tools?.map(toolForTemplate);
  const kwargs: Record<string, unknown> = {};
  if (req.reasoning_effort !== undefined) kwargs.reasoning_effort = req.reasoning_effort;
  Object.assign(kwargs, req.chat_template_kwargs ?? {});

  let text: string;
  try {
    const template = model.chatTemplates.forRequest({ hasTools: (tools?.length ?? 0) > 0, override: req.chat_template });
    text = template.render({
      messages: req.messages,
      tools: tools ?? null,
      documents: req.documents ?? null,
      addGenerationPrompt,
      continueFinalMessage: continueFinal,
      kwargs,
    });
  } catch (e) {
    if (e instanceof ChatTemplateError)
      throw new ChatRequestError(e.message, req.chat_template !== undefined ? 'chat_template' : 'messages');
    throw e;
  }

  ensurePromptChars(text.length, model.maxModelLen);
  let tokenIds: number[];
  try {
    tokenIds = model.tokenizer.encode(text, { addSpecialTokens: req.add_special_tokens ?? false });
  } catch (e) {
    // A token the tokenizer has but the model has no embedding for (issue 21): a 400 that names it.
    if (e instanceof UnembeddedTokenError) throw new ChatRequestError(e.message, 'messages');
    throw e;
  }
  if (req.truncate_prompt_tokens !== undefined) {
    // vLLM truncates on the left: the end of the conversation is what the model must see.
    const keep = req.truncate_prompt_tokens === -1 ? model.maxModelLen : req.truncate_prompt_tokens;
    if (tokenIds.length > keep) tokenIds = tokenIds.slice(tokenIds.length - keep);
  }
  if (tokenIds.length === 0) throw new ChatRequestError('The decoder prompt cannot be empty', 'messages');

  const last = req.messages[req.messages.length - 1];
  const role = addGenerationPrompt || !last ? 'assistant' : last.role;
  const echo = req.echo && last && last.role === role ? contentText(last.content) : '';
  return { text, tokenIds, role, echo };
}
