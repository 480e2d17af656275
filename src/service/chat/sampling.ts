/**
 * From a chat request to the engine's SamplingParams, one per choice, as vLLM's
 * `ChatCompletionRequest.to_sampling_params` builds them: each sampling control comes from the
 * request, else from the model's generation_config.json, else from vLLM's defaults; choice i of
 * an `n` request gets seed + i (vLLM's parallel sampling); the logit_bias keys become token ids.
 *
 * Not here: range checks with vLLM's messages (check.ts runs them on `effectiveSampling`), the
 * context-length rule (max-tokens.ts), the normalisation the GPU needs (resolveSampling in the
 * engine).
 * Reference: docs/reference/vllm-chat.md §2 (defaults, the `*` note) and §3.
 */
import type { GenerationDefaults } from '../../engine/model/config/generation-config';
import type { SamplingParams } from '../../engine/sampling/sampling-params';
import type { ChatRequest } from './request';

/** vLLM's `_DEFAULT_SAMPLING_PARAMS` for chat, used when neither the request nor the model sets a value. */
export const OPENAI_DEFAULTS = { temperature: 1, topP: 1, topK: 0, minP: 0, repetitionPenalty: 1 } as const;

/** The sampling controls a request ends up with (request > generation_config > defaults). */
export interface EffectiveSampling {
  temperature: number;
  topP: number;
  topK: number;
  minP: number;
  repetitionPenalty: number;
  presencePenalty: number;
  frequencyPenalty: number;
}

export function effectiveSampling(req: ChatRequest, generation: GenerationDefaults): EffectiveSampling {
  return {
    temperature: req.temperature ?? generation.temperature ?? OPENAI_DEFAULTS.temperature,
    topP: req.top_p ?? generation.topP ?? OPENAI_DEFAULTS.topP,
    topK: req.top_k ?? generation.topK ?? OPENAI_DEFAULTS.topK,
    minP: req.min_p ?? generation.minP ?? OPENAI_DEFAULTS.minP,
    repetitionPenalty: req.repetition_penalty ?? generation.repetitionPenalty ?? OPENAI_DEFAULTS.repetitionPenalty,
    presencePenalty: req.presence_penalty ?? 0,
    frequencyPenalty: req.frequency_penalty ?? 0,
  };
}

/** vLLM's greedy test (`_SAMPLING_EPS`), applied before the raise of tiny temperatures. */
export function isGreedy(s: EffectiveSampling): boolean {
  return s.temperature < 1e-5;
}

/** The logit_bias map with its keys parsed as token ids (check.ts has refused non-integer keys). */
export function logitBiasMap(bias: Readonly<Record<string, number>> | undefined): Map<number, number> {
  const out = new Map<number, number>();
  for (const [key, value] of Object.entries(bias ?? {})) out.set(Number(key.trim()), value);
  return out;
}

export interface SamplingContext {
  /** The served model's stop ids: config.json ∪ generation_config.json ∪ the tokenizer's eos. */
  eosTokenIds: readonly number[];
  generation: GenerationDefaults;
  /** Alternatives per generated token the response shows (0 when it shows none). */
  topLogprobs: number;
  /** The response shows logprobs (`logprobs: true`, or beam search's ranking). */
  returnLogprobs: boolean;
}

/** SamplingParams of choice `index`. */
export function choiceSampling(req: ChatRequest, ctx: SamplingContext, index: number): SamplingParams {
  const s = effectiveSampling(req, ctx.generation);
  const params: SamplingParams = {
    temperature: s.temperature,
    topP: s.topP,
    topK: s.topK,
    minP: s.minP,
    repetitionPenalty: s.repetitionPenalty,
    presencePenalty: s.presencePenalty,
    frequencyPenalty: s.frequencyPenalty,
    logitBias: logitBiasMap(req.logit_bias),
    minTokens: req.min_tokens ?? 0,
    eosTokenIds: ctx.eosTokenIds,
    ignoreEos: req.ignore_eos ?? false,
    stopTokenIds: [...new Set(req.stop_token_ids ?? [])],
    topLogprobs: ctx.topLogprobs,
    returnLogprobs: ctx.returnLogprobs,
  };
  if (req.seed !== undefined) params.seed = req.seed + BigInt(index);
  if (req.allowed_token_ids !== undefined) params.allowedTokenIds = req.allowed_token_ids;
  return params;
}
