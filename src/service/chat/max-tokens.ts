/**
 * The context-length rule: how many tokens each choice may generate once the prompt is known,
 * with vLLM's errors (`_validate_input` and `get_max_tokens`). The requested bound is
 * `max_completion_tokens or max_tokens` (0 falls through, as Python's `or` does); the effective
 * bound is the smallest of that, max_model_len - prompt tokens, and the model's
 * generation_config max_new_tokens. min_tokens may not exceed it.
 *
 * Not here: the other request rules (check.ts).
 * Reference: docs/reference/vllm-chat.md §2 rows max_tokens / min_tokens.
 */
import type { GenerationDefaults } from '../../engine/model/config/generation-config';
import { ensure } from './errors';
import type { ChatRequest } from './request';

export function maxTokensFor(
  req: ChatRequest,
  promptTokens: number,
  model: { maxModelLen: number; generation: GenerationDefaults },
): number {
  const limit = model.maxModelLen;
  ensure(
    promptTokens < limit,
    `This model's maximum context length is ${limit} tokens. However, your request has ${promptTokens} input tokens. Please reduce the length of the input messages.`,
    'messages',
  );
  const requested = req.max_completion_tokens || req.max_tokens;
  ensure(
    requested === undefined || promptTokens + requested <= limit,
    `'max_tokens' or 'max_completion_tokens' is too large: ${requested}. This model's maximum context length is ${limit} tokens and your request has ${promptTokens} input tokens (${requested} > ${limit} - ${promptTokens}).`,
    req.max_completion_tokens ? 'max_completion_tokens' : 'max_tokens',
  );
  const candidates = [limit - promptTokens];
  if (requested !== undefined) candidates.push(requested);
  if (model.generation.maxNewTokens !== undefined) candidates.push(model.generation.maxNewTokens);
  const maxTokens = Math.min(...candidates);
  ensure(maxTokens >= 1, `max_tokens must be at least 1, got ${maxTokens}.`, 'max_tokens');
  const minTokens = req.min_tokens ?? 0;
  ensure(minTokens <= maxTokens, `min_tokens must be less than or equal to max_tokens=${maxTokens}, got ${minTokens}.`, 'min_tokens');
  return maxTokens;
}
