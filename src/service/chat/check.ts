/**
 * checkChatRequest: every cross-field and model-dependent rule of a chat completion request, in
 * vLLM's order (request validators, then SamplingParams, then the engine's vocabulary checks),
 * each failing with vLLM's own message as a 400 ChatRequestError. Field types and ranges that
 * pydantic enforces (seed bounds, truncate_prompt_tokens >= -1, literals) are the zod schema's.
 * The rules that need the rendered prompt (context length, min_tokens <= max_tokens) are in
 * max-tokens.ts. The sampling controls' ranges and messages are the engine's one table
 * (samplingRangeError in engine/sampling/sampling-params.ts), written here with Python's floats.
 *
 * Hearth-specific refusals say what cannot be honoured: priorities other than 0 (no priority
 * scheduling), per-request logits processors, and combinations beam search cannot honour.
 * Structured outputs and the tool choices they enforce ("required", a named function) are
 * checked further when their constraint is compiled (src/service/structured/constraint-spec.ts).
 *
 * Reference: docs/reference/vllm-chat.md §2 (the table) and §9 (validation order); vLLM protocol.py validators
 * (check_logprobs, check_tool_usage, check_generation_prompt, check_cache_salt_support),
 * SamplingParams._verify_args, v1 Processor._validate_* .
 */
import { MAX_TOP_LOGPROBS } from '../../engine/sampling/logprobs';
import { samplingRangeError } from '../../engine/sampling/sampling-params';
import type { GenerationDefaults } from '../../engine/model/config/generation-config';
import { ChatRequestError, ensure } from './errors';
import { logprobsMode, promptLogprobsCount } from './logprobs';
import { pyFloat, pyRepr } from './py-format';
import type { ChatRequest } from './request';
import { effectiveSampling, isGreedy } from './sampling';

/** What the checks need to know about the served model. */
export interface ChatModelLimits {
  /** config.json vocab_size: ids at or above it are out of vocabulary. */
  vocabSize: number;
  /** The longest prompt + output the engine accepts. */
  maxModelLen: number;
  generation: GenerationDefaults;
}

/** Hearth's bound on `n` (choices, or beams): each one holds a batch slot and KV blocks. */
export const MAX_CHOICES = 128;

const TOOL_CHOICE_USAGE = 'Correct usage: `{"type": "function", "function": {"name": "my_function"}}`';

/**
 * Throws the first broken rule as a ChatRequestError. Steps 1-9 concern the request alone; with
 * `model` null (the model is not loaded yet) only they run, so a malformed request gets its 400
 * before the model is looked up, as in vLLM.
 */
export function checkChatRequest(req: ChatRequest, model: ChatModelLimits | null): void {
  checkRequestAlone(req);
  if (model) checkAgainstModel(req, model);
}

/** Steps 1-9: the rules of the request alone. */
function checkRequestAlone(req: ChatRequest): void {
  // 1. stream_options only with streaming (an empty object counts as absent, as in Python).
  ensure(
    !(req.stream_options && Object.keys(req.stream_options).length > 0 && !req.stream),
    'Stream options can only be defined when `stream=True`.',
    'stream_options',
  );

  // 2. logprobs (vLLM's check_logprobs).
  if (req.prompt_logprobs !== undefined) {
    ensure(!(req.stream && req.prompt_logprobs > 0), '`prompt_logprobs` are not available when `stream=True`.', 'prompt_logprobs');
    ensure(req.prompt_logprobs >= 0, '`prompt_logprobs` must be a positive value.', 'prompt_logprobs');
  }
  if (req.top_logprobs !== undefined) {
    ensure(req.top_logprobs >= 0, '`top_logprobs` must be a positive value.', 'top_logprobs');
    ensure(!(req.top_logprobs > 0 && req.logprobs !== true), 'when using `top_logprobs`, `logprobs` must be set to true.', 'top_logprobs');
  }

  // 3. structured outputs: at most one of json/regex/choice (vLLM).
  checkStructuredOutputs(req);

  // 4. tools and tool_choice (vLLM's check_tool_usage), then the choices Hearth honours.
  checkToolUsage(req);

  // 5. the generation prompt and continuing the final message exclude each other.
  ensure(
    !(req.continue_final_message === true && req.add_generation_prompt === true),
    'Cannot set both `continue_final_message` and `add_generation_prompt` to True.',
    'continue_final_message',
  );

  // 6. cache_salt.
  ensure(
    req.cache_salt === undefined || req.cache_salt.length > 0,
    "Parameter 'cache_salt' must be a non-empty string if provided.",
    'cache_salt',
  );

  // 7. priority: Hearth schedules first come, first served.
  const priority = req.priority ?? 0;
  ensure(priority === 0, `Got priority ${priority} but Priority scheduling is not enabled.`, 'priority');

  // 8. per-request logits processors are Python objects; Hearth has none to resolve.
  ensure(
    !req.logits_processors?.length,
    'The `logits_processors` argument is not supported by this server. Hearth runs no server-side code named by a request; use logit_bias, allowed_token_ids or bad_words.',
    'logits_processors',
  );

  // 9. n.
  const n = req.n ?? 1;
  ensure(n >= 1, `n must be at least 1, got ${n}.`, 'n');
  ensure(n <= MAX_CHOICES, `n must be at most ${MAX_CHOICES}, got ${n}.`, 'n');
}

/** Steps 10-15: the rules that need the served model (its defaults, vocabulary and context). */
function checkAgainstModel(req: ChatRequest, model: ChatModelLimits): void {
  const n = req.n ?? 1;

  // 10. sampling controls after the model's defaults (SamplingParams._verify_args).
  const s = effectiveSampling(req, model.generation);
  const outOfRange = samplingRangeError({ ...s, minTokens: req.min_tokens ?? 0 }, pyFloat);
  if (outOfRange) throw new ChatRequestError(outOfRange.message, outOfRange.param);
  const stops = typeof req.stop === 'string' ? [req.stop] : (req.stop ?? []);
  ensure(
    stops.every((x) => x.length > 0),
    'stop cannot contain an empty string.',
    'stop',
  );
  const badWords = req.bad_words ?? [];
  ensure(
    badWords.every((w) => w.length > 0),
    `bad_words cannot contain an empty string. Got bad_words=${pyRepr(badWords)}`,
    'bad_words',
  );

  // 11. greedy decoding has one answer (beam search keeps n beams instead).
  if (!req.use_beam_search) ensure(!(isGreedy(s) && n > 1), `n must be 1 when using greedy sampling, got ${n}.`, 'n');

  // 12. logprob counts against the server's max_logprobs.
  const mode = logprobsMode(req);
  if (mode) {
    ensure(
      mode.top <= MAX_TOP_LOGPROBS,
      `Requested sample logprobs of ${mode.top}, which is greater than max allowed: ${MAX_TOP_LOGPROBS}`,
      'top_logprobs',
    );
  }
  const promptLogprobs = promptLogprobsCount(req);
  if (promptLogprobs !== null) {
    ensure(
      promptLogprobs <= MAX_TOP_LOGPROBS,
      `Requested prompt logprobs of ${promptLogprobs}, which is greater than max allowed: ${MAX_TOP_LOGPROBS}`,
      'prompt_logprobs',
    );
  }

  // 13. token ids against the vocabulary (the engine-side checks of vLLM).
  checkVocabulary(req, model.vocabSize);

  // 14. truncation cannot exceed the context.
  if (req.truncate_prompt_tokens !== undefined) {
    ensure(
      req.truncate_prompt_tokens <= model.maxModelLen,
      `truncate_prompt_tokens value (${req.truncate_prompt_tokens}) is greater than max_model_len (${model.maxModelLen}). Please, select a smaller truncation size.`,
      'truncate_prompt_tokens',
    );
  }

  // 15. beam search ranks candidates by raw logprobs: refuse what it would silently drop.
  if (req.use_beam_search) checkBeamSearch(req, stops, badWords);
}

function checkStructuredOutputs(req: ChatRequest): void {
  const so = req.structured_outputs ?? {};
  const set = (k: string) => so[k] !== undefined && so[k] !== null;
  const kinds = ['json', 'regex', 'choice'].filter(set);
  ensure(
    kinds.length <= 1,
    "You can only use one kind of constraints for structured outputs ('json', 'regex' or 'choice').",
    'structured_outputs',
  );
  // The rest (one constraint per request, its content, _backend) needs the compiler: structured/constraint-spec.ts.
}

function checkToolUsage(req: ChatRequest): void {
  const tc = req.tool_choice;
  // null counts as absent (newer vLLM); tools without a choice mean "auto".
  if (tc === undefined || tc === null || tc === 'none') return;
  ensure(req.tools !== undefined, 'When using `tool_choice`, `tools` must be set.', 'tool_choice');
  const isObject = typeof tc === 'object' && !Array.isArray(tc);
  ensure(
    tc === 'auto' || tc === 'required' || isObject,
    `Invalid value for \`tool_choice\`: ${typeof tc === 'string' ? tc : pyRepr(tc)}! Only named tools, "none", "auto" or "required" are supported.`,
    'tool_choice',
  );
  // vLLM v0.11: "required" with an empty tool list behaves as "none".
  if (tc === 'required' && req.tools.length === 0) return;
  if (isObject) {
    const fn = (tc as Record<string, unknown>).function;
    ensure(
      fn !== null && typeof fn === 'object' && !Array.isArray(fn),
      `Invalid value for \`function\`: \`${pyRepr(fn)}\` in \`tool_choice\`! ${TOOL_CHOICE_USAGE}`,
      'tool_choice',
    );
    const f = fn as Record<string, unknown>;
    ensure('name' in f, `Expected field \`name\` in \`function\` in \`tool_choice\`! ${TOOL_CHOICE_USAGE}`, 'tool_choice');
    ensure(
      typeof f.name === 'string' && f.name.length > 0,
      `Invalid \`name\` in \`function\`: \`${typeof f.name === 'string' ? f.name : pyRepr(f.name)}\` in \`tool_choice\`! ${TOOL_CHOICE_USAGE}`,
      'tool_choice',
    );
    ensure(
      req.tools.some((t) => t.function.name === f.name),
      'The tool specified in `tool_choice` does not match any of the specified `tools`',
      'tool_choice',
    );
  }
}

function checkVocabulary(req: ChatRequest, vocabSize: number): void {
  const outside = (ids: Iterable<number>) => [...ids].filter((id) => !(Number.isInteger(id) && id >= 0 && id < vocabSize));
  if (req.logit_bias) {
    const ids: number[] = [];
    for (const key of Object.keys(req.logit_bias)) {
      // Python's int(): optional sign and surrounding whitespace, digits (underscores between digits).
      const text = key.trim();
      ensure(/^[+-]?\d+(_\d+)*$/.test(text), `invalid literal for int() with base 10: ${pyRepr(key)}`, 'logit_bias');
      ids.push(Number(text.replaceAll('_', '')));
    }
    const bad = outside(ids);
    ensure(
      bad.length === 0,
      `token_id(s) ${pyRepr(bad)} in logit_bias contain out-of-vocab token ids. Vocabulary size: ${vocabSize}`,
      'logit_bias',
    );
  }
  if (req.stop_token_ids) {
    const bad = outside(new Set(req.stop_token_ids));
    ensure(
      bad.length === 0,
      `token_id(s) ${pyRepr(bad)} in stop_token_ids contain out-of-vocab token ids. Vocabulary size: ${vocabSize}`,
      'stop_token_ids',
    );
  }
  if (req.allowed_token_ids !== undefined) {
    ensure(req.allowed_token_ids.length > 0, 'allowed_token_ids is not None and empty!', 'allowed_token_ids');
    ensure(outside(req.allowed_token_ids).length === 0, 'allowed_token_ids contains out-of-vocab token id!', 'allowed_token_ids');
  }
}

function checkBeamSearch(req: ChatRequest, stops: string[], badWords: string[]): void {
  const refuse = (field: string, why = 'beam search ranks candidates by their raw logprobs') =>
    `use_beam_search cannot be combined with \`${field}\`: ${why}, so Hearth cannot honour it.`;
  ensure(stops.length === 0, refuse('stop', 'beams end only at the end-of-sequence token or the length limit'), 'stop');
  ensure(
    !req.stop_token_ids?.length,
    refuse('stop_token_ids', 'beams end only at the end-of-sequence token or the length limit'),
    'stop_token_ids',
  );
  ensure(!req.min_tokens, refuse('min_tokens'), 'min_tokens');
  ensure(!req.logit_bias || Object.keys(req.logit_bias).length === 0, refuse('logit_bias'), 'logit_bias');
  ensure(req.allowed_token_ids === undefined, refuse('allowed_token_ids'), 'allowed_token_ids');
  ensure(badWords.length === 0, refuse('bad_words'), 'bad_words');
  for (const [field, neutral] of [
    ['presence_penalty', 0],
    ['frequency_penalty', 0],
    ['repetition_penalty', 1],
    ['top_p', 1],
    ['top_k', 0],
    ['min_p', 0],
  ] as const) {
    const value = req[field];
    ensure(value === undefined || value === neutral || (field === 'top_k' && value === -1), refuse(field), field);
  }
}
