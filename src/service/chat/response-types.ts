/**
 * The shapes of chat completion responses and stream chunks, field by field as vLLM serialises
 * them (non-streaming: every field, nulls included; streaming: only the fields vLLM sets).
 * Types only.
 *
 * Reference: the specification's "Chat completion response" tables; docs/reference/vllm-chat.md §4.
 */
import type { OpenAIErrorBody } from '../error-envelope';
import type { LogprobEntry, PromptLogprobValue } from './logprobs';
import type { ToolCall, ToolCallDelta } from './output-parser';
import type { StopReason } from './choice-output';

export interface Usage {
  prompt_tokens: number;
  total_tokens: number;
  completion_tokens: number;
  /** Prompt tokens whose KV came from the prefix cache. */
  prompt_tokens_details: { cached_tokens: number } | null;
}

export interface ChatMessageOut {
  role: string;
  content: string | null;
  refusal: null;
  annotations: null;
  audio: null;
  function_call: null;
  tool_calls: ToolCall[];
  /** vLLM v0.11's name for the reasoning text. */
  reasoning_content: string | null;
  /** Newer vLLM's name for the same text. */
  reasoning: string | null;
}

export interface ChatChoice {
  index: number;
  message: ChatMessageOut;
  logprobs: { content: LogprobEntry[] } | null;
  finish_reason: string;
  stop_reason: StopReason;
  token_ids: number[] | null;
}

export interface ChatCompletion {
  id: string;
  object: 'chat.completion';
  created: number;
  model: string;
  choices: ChatChoice[];
  service_tier: null;
  system_fingerprint: null;
  usage: Usage;
  prompt_logprobs: (Record<string, PromptLogprobValue> | null)[] | null;
  prompt_token_ids: number[] | null;
  kv_transfer_params: null;
}

export interface ChunkDelta {
  role?: string;
  content?: string;
  reasoning_content?: string;
  reasoning?: string;
  tool_calls?: ToolCallDelta[];
}

export interface ChunkChoice {
  index: number;
  delta: ChunkDelta;
  logprobs: { content: LogprobEntry[] } | null;
  finish_reason: string | null;
  stop_reason?: StopReason;
  token_ids?: number[] | null;
}

export interface ChatCompletionChunk {
  id: string;
  object: 'chat.completion.chunk';
  created: number;
  model: string;
  choices: ChunkChoice[];
  /** Only on the first chunk, with return_token_ids. */
  prompt_token_ids?: number[];
  /** Every chunk with continuous_usage_stats; the final usage chunk with include_usage. */
  usage?: Usage | Omit<Usage, 'prompt_tokens_details'>;
}

/** An error after streaming began (vLLM sends it as a data event, then [DONE]). */
export type StreamErrorEvent = OpenAIErrorBody;
