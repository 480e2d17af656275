/**
 * From a checked chat request, its rendered prompt and the served model to everything a run
 * needs: the engine's GenerationRequest (one SamplingParams per choice with seed + i, stop ids,
 * the context-length bound, bad words as token sequences, prompt logprobs, beam search, the
 * cache salt, one constraint slot per choice for structured outputs, the LoRA adapter, the abort
 * signal), one ChoiceOutput per choice, and the ChatPlan the response and chunk writers follow.
 *
 * Not here: the checks (check.ts, max-tokens.ts), running the engine (completions.ts).
 */
import { resolveSampling, SamplingParamsError } from '../../engine/sampling/sampling-params';
import type { GenerationRequest, LoraAdapter, ServedModel } from '../../engine/generate/types';
import type { ModelTokenizer } from '../../engine/model/text/tokenizer';
import { ChoiceOutput } from './choice-output';
import { ChatRequestError } from './errors';
import { LogprobsFormatter, logprobsMode, promptLogprobsCount } from './logprobs';
import type { OutputParser } from './output-parser';
import type { ChatPrompt } from './prompt';
import type { ChatRequest } from './request';
import { choiceSampling } from './sampling';

/** What the response and chunk writers need to know about a request. */
export interface ChatPlan {
  /** `chatcmpl-<request id>`. */
  id: string;
  /** Unix seconds. */
  created: number;
  /** The response's `model`. */
  model: string;
  n: number;
  prompt: ChatPrompt;
  tokenizer: ModelTokenizer;
  /** null: the response shows no logprobs. */
  logprobs: LogprobsFormatter | null;
  returnTokenIds: boolean;
  /** stream_options.include_usage (true once stream_options is given). */
  includeUsage: boolean;
  continuousUsage: boolean;
  parser: OutputParser;
}

export interface PlanInput {
  req: ChatRequest;
  served: ServedModel;
  servedName: string;
  prompt: ChatPrompt;
  maxTokens: number;
  adapter: LoraAdapter | null;
  parser: OutputParser;
  requestId: string;
  /** Milliseconds since the epoch. */
  now: number;
  signal?: AbortSignal;
}

export interface PlannedRun {
  plan: ChatPlan;
  generation: GenerationRequest;
  choices: ChoiceOutput[];
}

export function planChat(input: PlanInput): PlannedRun {
  const { req, served, prompt } = input;
  const n = req.n ?? 1;
  const mode = logprobsMode(req);
  const samplingContext = {
    eosTokenIds: served.eosTokenIds,
    generation: served.generation,
    topLogprobs: mode?.top ?? 0,
    returnLogprobs: mode !== null || req.use_beam_search === true,
  };
  const sampling = Array.from({ length: n }, (_, i) => choiceSampling(req, samplingContext, i));
  // The engine's own normalisation, run now so that anything it would refuse is a 400 before streaming.
  for (const params of sampling) {
    try {
      resolveSampling(params, served.config.vocabSize);
    } catch (e) {
      if (e instanceof SamplingParamsError) throw new ChatRequestError(e.message);
      throw e;
    }
  }

  const generation: GenerationRequest = {
    model: served.id,
    adapter: input.adapter,
    promptTokenIds: prompt.tokenIds,
    n,
    sampling,
    maxTokens: input.maxTokens,
    promptLogprobs: promptLogprobsCount(req),
    badWords: served.tokenizer.badWordsIds(req.bad_words ?? []),
    constraints: Array.from({ length: n }, () => null),
  };
  if (req.cache_salt !== undefined) generation.cacheSalt = req.cache_salt;
  if (req.use_beam_search) generation.beamSearch = { lengthPenalty: req.length_penalty ?? 1 };
  if (input.signal) generation.signal = input.signal;

  const eos = new Set(req.ignore_eos ? [] : served.eosTokenIds);
  const settings = {
    tokenizer: served.tokenizer,
    promptIds: prompt.tokenIds,
    skipSpecialTokens: req.skip_special_tokens ?? true,
    stop: typeof req.stop === 'string' ? [req.stop] : (req.stop ?? []),
    includeStopStr: req.include_stop_str_in_output ?? false,
    eosTokenIds: eos,
    primaryEos: served.tokenizer.eosTokenId,
    stopTokenIds: new Set(req.stop_token_ids ?? []),
    minTokens: req.min_tokens ?? 0,
    maxTokens: input.maxTokens,
  };
  const choices = Array.from({ length: n }, (_, i) => new ChoiceOutput(i, settings));

  const streamOptions = req.stream ? req.stream_options : undefined;
  const includeUsage = streamOptions ? (streamOptions.include_usage ?? true) : false;
  const plan: ChatPlan = {
    id: `chatcmpl-${input.requestId}`,
    created: Math.floor(input.now / 1000),
    model: input.servedName,
    n,
    prompt,
    tokenizer: served.tokenizer,
    logprobs: mode ? new LogprobsFormatter(served.tokenizer, mode) : null,
    returnTokenIds: req.return_token_ids === true,
    includeUsage,
    continuousUsage: includeUsage && streamOptions?.continuous_usage_stats === true,
    parser: input.parser,
  };
  return { plan, generation, choices };
}
