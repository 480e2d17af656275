/**
 * The chat completion request body, field by field as the specification's request table lists
 * it, with vLLM's types, pydantic's lax coercion (chat-coerce.ts) and its defaults left to the
 * service (an absent field stays undefined: "not given" matters for several fields). Unknown
 * fields are kept and ignored, at the top level and inside messages. The parsed value is the
 * chat service's ChatRequest (routes/chat.ts hands it to createChatCompletion, so the compiler
 * keeps the two in step).
 *
 * Not here: cross-field rules and vLLM's messages for them (service/chat/check.ts).
 * Reference: spec "Chat completion request"; docs/reference/vllm-chat.md §2; vLLM protocol.py ChatCompletionRequest.
 */
import { z } from 'zod';
import { laxBigInt, laxBool, laxFloat, laxFloatItem, laxInt, laxIntItem, laxStr, optional } from './chat-coerce';
import { capped, dict, dictOf, list } from './lists';

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

// Caps on list fields that cost engine time per entry (issue 10, item 7): stop strings are
// matched on every decoded piece and bad words become token masks, so without a cap a 32 MiB
// body of them stalls every other caller. Over a cap: vLLM's 400 with pydantic's `too_long`.
/** Most messages in one request. */
export const MAX_MESSAGES = 2048;
/** Most stop strings in one request. */
export const MAX_STOP_STRINGS = 64;
/** Most bad words in one request. */
export const MAX_BAD_WORDS = 256;
/** Most characters of one bad word (each is tokenised; issue 26). */
export const MAX_BAD_WORD_CHARS = 1024;
// Issue 26: every other list and dict has a cap too, checked before its entries are parsed, so
// no request makes one validation issue (or one parse) per entry of a 32 MiB body.
/** Most token ids in `allowed_token_ids`, `stop_token_ids` and `logit_bias`: above the largest vocabulary Hearth runs (Gemma 3's 262,208). */
export const MAX_TOKEN_IDS = 300_000;
/** Most tools, tool calls of a message, documents and logits processors. */
export const MAX_TOOLS = 128;
/** Most content parts of one message. */
export const MAX_CONTENT_PARTS = 1024;
/** Most keys of a JSON object field (a tool's parameters, chat_template_kwargs, structured_outputs, ...); its nested values are not counted. */
export const MAX_OBJECT_KEYS = 1024;

const JsonObject = dict(MAX_OBJECT_KEYS);

/** A content part; non-text parts reach the template step, which refuses them for text models. */
const ContentPart = z.looseObject({ type: z.string(), text: z.string().optional() });

const ToolCallIn = z.looseObject({
  id: z.string().optional(),
  type: z.string().optional(),
  function: z.looseObject({ name: z.string(), arguments: z.union([z.string(), JsonObject]) }),
});

/** One message: any role (vLLM's CustomChatCompletionMessageParam), extra keys kept for the template. */
const Message = z.looseObject({
  role: z.string(),
  content: z.union([z.string(), list(ContentPart, MAX_CONTENT_PARTS)]).nullish(),
  name: optional(z.string()),
  tool_calls: list(ToolCallIn, MAX_TOOLS).nullish(),
  tool_call_id: optional(z.string()),
});

const Tool = z.looseObject({
  type: z.literal('function').optional(),
  function: z.looseObject({
    name: z.string(),
    description: z.string().nullish(),
    parameters: JsonObject.nullish(),
  }),
});

const ResponseFormat = z.looseObject({
  type: z.enum(['text', 'json_object', 'json_schema', 'structural_tag']),
  json_schema: JsonObject.nullish(),
});

const StreamOptions = z.looseObject({
  include_usage: laxBool(),
  continuous_usage_stats: laxBool(),
});

const LogitsProcessor = z.union([
  z.string(),
  z.strictObject({ qualname: z.string(), args: list(z.unknown(), MAX_OBJECT_KEYS).nullish(), kwargs: JsonObject.nullish() }),
]);

/** engine_xargs values: strings or numbers, or lists of them. */
const ExtraArgs = dictOf(z.union([z.string(), z.number(), list(z.union([z.string(), z.number()]), MAX_OBJECT_KEYS)]), MAX_OBJECT_KEYS);

export const ChatCompletionRequest = z
  .looseObject({
    /** The conversation, oldest first; the only required field. */
    messages: list(Message, MAX_MESSAGES),
    /** Base model id, registered model or checkpoint name; omitted or "" means the default model. */
    model: laxStr(),
    /** Subtracted per occurrence of a token in the output, in [-2, 2]; default 0. */
    frequency_penalty: laxFloat(),
    /** Token id (as a string key) -> bias added to its logit, clamped to [-100, 100]. */
    logit_bias: optional(dictOf(laxFloatItem(), MAX_TOKEN_IDS)),
    /** Return generated tokens' logprobs; default false (see README: omitted still returns the chosen tokens' logprobs). */
    logprobs: laxBool(),
    /** Alternatives per generated token, 0..20; needs logprobs true when > 0. */
    top_logprobs: laxInt(),
    /** Deprecated bound on generated tokens per choice. */
    max_tokens: laxInt(),
    /** Bound on generated tokens per choice (wins over max_tokens unless 0). */
    max_completion_tokens: laxInt(),
    /** Number of choices (beam width with use_beam_search); default 1. */
    n: laxInt(),
    /** Subtracted once from tokens present in the output, in [-2, 2]; default 0. */
    presence_penalty: laxFloat(),
    /** `{type: "text"}`; json_object / json_schema / structural_tag need structured outputs. */
    response_format: optional(ResponseFormat),
    /** 64-bit seed of the sampler; choice i samples with seed + i. */
    seed: laxBigInt(true, { ge: INT64_MIN, le: INT64_MAX }),
    /** Stop string(s): the output ends before (or, with include_stop_str_in_output, after) the first match. */
    // The cap is checked before the union so that a long list is reported as too_long, not as "no shape matched".
    stop: optional(capped(z.union([z.string(), z.array(z.string())]), MAX_STOP_STRINGS)),
    /** Stream the reply as Server-Sent Events. */
    stream: laxBool(),
    /** include_usage (default true once given), continuous_usage_stats (default false). */
    stream_options: optional(StreamOptions),
    /** Sampling temperature >= 0 (0 is greedy); default from the model's generation_config, else 1. */
    temperature: laxFloat(),
    /** Nucleus mass in (0, 1]; default from generation_config, else 1. */
    top_p: laxFloat(),
    /** Function tools `{type: "function", function: {name, description, parameters}}`, passed to the template. */
    tools: optional(list(Tool, MAX_TOOLS)),
    /** "none", "auto", "required" or `{type: "function", function: {name}}`; checked with vLLM's messages. */
    tool_choice: z.unknown().optional(),
    /** "low" | "medium" | "high", passed to the chat template. */
    reasoning_effort: optional(z.enum(['low', 'medium', 'high'])),
    /** Keep the reasoning text in the reply; default true. */
    include_reasoning: laxBool(false),
    /** Allow several tool calls in one reply; default true. */
    parallel_tool_calls: laxBool(),
    /** End-user identifier; ignored. */
    user: laxStr(),
    /** Beam search of width n. */
    use_beam_search: laxBool(false),
    /** Keep the k most likely tokens; 0 or -1 disables; default from generation_config, else 0. */
    top_k: laxInt(),
    /** Drop tokens below min_p times the top probability, in [0, 1]; default from generation_config, else 0. */
    min_p: laxFloat(),
    /** Multiplicative penalty > 0 on tokens of the prompt and output; default from generation_config, else 1. */
    repetition_penalty: laxFloat(),
    /** Beam search's length penalty; default 1. */
    length_penalty: laxFloat(false),
    /** Token ids that end a choice (stop_reason is the id). */
    stop_token_ids: optional(list(laxIntItem(), MAX_TOKEN_IDS)),
    /** Keep the matched stop string (or stop token text) in the output. */
    include_stop_str_in_output: laxBool(false),
    /** Keep generating past the end-of-sequence token. */
    ignore_eos: laxBool(false),
    /** Stop tokens and stop strings cannot end a choice before this many tokens; default 0. */
    min_tokens: laxInt(false),
    /** Drop special tokens from the text; default true. */
    skip_special_tokens: laxBool(false),
    /** Spacing around special tokens (no effect with fast tokenizers, as in vLLM). */
    spaces_between_special_tokens: laxBool(false),
    /** Keep only the last N prompt tokens; -1 means max_model_len. */
    truncate_prompt_tokens: laxInt(true, { ge: -1n }),
    /** Alternatives per prompt position (non-streaming only). */
    prompt_logprobs: laxInt(),
    /** Only these token ids can be generated. */
    allowed_token_ids: optional(list(laxIntItem(), MAX_TOKEN_IDS)),
    /** Words whose tokens are never generated (with and without a leading space). */
    bad_words: list(z.string().max(MAX_BAD_WORD_CHARS), MAX_BAD_WORDS).optional(),
    /** Prepend the last message to the reply when it has the reply's role. */
    echo: laxBool(false),
    /** Add the template's assistant header; default true (false when continue_final_message). */
    add_generation_prompt: laxBool(false),
    /** Leave the final message open for the model to continue. */
    continue_final_message: laxBool(false),
    /** Add the tokenizer's special tokens (e.g. BOS) on top of the template's; default false. */
    add_special_tokens: laxBool(false),
    /** RAG documents for templates that support them. */
    documents: optional(list(JsonObject, MAX_TOOLS)),
    /** A Jinja chat template for this request, in place of the model's. */
    chat_template: laxStr(),
    /** Extra variables for the chat template (e.g. enable_thinking). */
    chat_template_kwargs: optional(JsonObject),
    /** Multimodal processor options; text models have none to apply. */
    mm_processor_kwargs: optional(JsonObject),
    /** Structured-output constraint (json, regex, choice, grammar, json_object, structural_tag) and options. */
    structured_outputs: optional(JsonObject),
    /** Must be 0: Hearth does not schedule by priority. */
    priority: laxInt(false),
    /** The response id is `chatcmpl-<request_id>` (X-Request-Id wins); default a random id. */
    request_id: laxStr(false),
    /** Per-request logits processors: refused (Hearth resolves no code by name). */
    logits_processors: optional(list(LogitsProcessor, MAX_TOOLS)),
    /** With logprobs, write tokens as `token_id:<id>`. */
    return_tokens_as_token_ids: laxBool(),
    /** Add choices[].token_ids and prompt_token_ids to the reply. */
    return_token_ids: laxBool(),
    /** Prefix-cache entries are shared only between requests with the same salt. */
    cache_salt: laxStr(),
    /** Disaggregated-serving parameters; Hearth has no KV transfer, the reply's value is null. */
    kv_transfer_params: optional(JsonObject),
    /** Extra parameters for custom extensions (the specification's name). */
    engine_xargs: optional(ExtraArgs),
    /** vLLM's name for engine_xargs. */
    vllm_xargs: optional(ExtraArgs),
  })
  .transform(({ vllm_xargs, ...rest }) => {
    const out = rest as typeof rest & { engine_xargs?: Record<string, unknown> };
    if (out.engine_xargs === undefined && vllm_xargs !== undefined) out.engine_xargs = vllm_xargs;
    return out;
  });

export type ChatCompletionRequest = z.output<typeof ChatCompletionRequest>;
