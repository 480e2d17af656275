/**
 * ChatRequest: a chat completion request as the chat service receives it, after the API layer
 * parsed and coerced it (src/api/schemas/chat-request.ts, whose output must stay assignable to
 * this type). Field names are the wire names; `undefined` means the client did not send the
 * field (or sent null), which matters where vLLM tells "unset" from a value (logprobs, max_tokens,
 * sampling controls that fall back to the model's generation_config).
 *
 * Not here: validation (the zod schema checks types; check.ts checks the cross-field rules).
 * Reference: the specification's "Chat completion request" table; docs/reference/vllm-chat.md §2.
 */
import type { ChatMessage } from '../../engine/model/text/chat-template';

export type { ChatMessage };

export interface ChatToolFunction {
  name: string;
  description?: string | null;
  parameters?: Record<string, unknown> | null;
  [key: string]: unknown;
}

export interface ChatTool {
  type?: string;
  function: ChatToolFunction;
  [key: string]: unknown;
}

export interface ResponseFormat {
  type: string;
  json_schema?: Record<string, unknown> | null;
  [key: string]: unknown;
}

export interface StreamOptions {
  include_usage?: boolean;
  continuous_usage_stats?: boolean;
  [key: string]: unknown;
}

export type LogitsProcessorSpec = string | { qualname: string; args?: unknown[] | null; kwargs?: Record<string, unknown> | null };

export interface ChatRequest {
  messages: ChatMessage[];
  model?: string;
  frequency_penalty?: number;
  logit_bias?: Record<string, number>;
  logprobs?: boolean;
  top_logprobs?: number;
  max_tokens?: number;
  max_completion_tokens?: number;
  n?: number;
  presence_penalty?: number;
  response_format?: ResponseFormat;
  /** Exact 64-bit value (JSON numbers above 2^53 keep their digits through the raw body). */
  seed?: bigint;
  stop?: string | string[];
  stream?: boolean;
  stream_options?: StreamOptions;
  temperature?: number;
  top_p?: number;
  tools?: ChatTool[];
  /** Loosely typed on purpose: check.ts gives vLLM's messages for wrong values. */
  tool_choice?: unknown;
  reasoning_effort?: 'low' | 'medium' | 'high';
  include_reasoning?: boolean;
  parallel_tool_calls?: boolean;
  user?: string;
  use_beam_search?: boolean;
  top_k?: number;
  min_p?: number;
  repetition_penalty?: number;
  length_penalty?: number;
  stop_token_ids?: number[];
  include_stop_str_in_output?: boolean;
  ignore_eos?: boolean;
  min_tokens?: number;
  skip_special_tokens?: boolean;
  spaces_between_special_tokens?: boolean;
  truncate_prompt_tokens?: number;
  prompt_logprobs?: number;
  allowed_token_ids?: number[];
  bad_words?: string[];
  echo?: boolean;
  add_generation_prompt?: boolean;
  continue_final_message?: boolean;
  add_special_tokens?: boolean;
  documents?: Record<string, unknown>[];
  chat_template?: string;
  chat_template_kwargs?: Record<string, unknown>;
  mm_processor_kwargs?: Record<string, unknown>;
  structured_outputs?: Record<string, unknown>;
  priority?: number;
  request_id?: string;
  logits_processors?: LogitsProcessorSpec[];
  return_tokens_as_token_ids?: boolean;
  return_token_ids?: boolean;
  cache_salt?: string;
  kv_transfer_params?: Record<string, unknown>;
  /** The specification's `engine_xargs` (vLLM's `vllm_xargs`); both names are accepted. */
  engine_xargs?: Record<string, unknown>;
}
