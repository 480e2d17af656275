/**
 * One choice of a request on the CPU backend: llama.cpp completions over the placeholder
 * vocabulary (cpu-gguf.ts), turned into the engine's `tokens` and `finished` events.
 *
 * The finish is decided here, as the WebGPU scheduler decides it: EOS (unless ignore_eos) and
 * stop_token_ids end the choice with "stop", max_tokens with "length". llama.cpp stops by itself
 * only at the EOS id of its vocabulary; anything else that ends the choice aborts its request.
 * min_tokens runs as two completions: the first `minTokens` tokens with every stop id biased to
 * -inf, then the rest (the prompt plus those tokens, whose KV llama.cpp's prompt cache reuses).
 *
 * Not here: the sampler fields (llama-sampling.ts), the wllama instance (cpu-engine.ts).
 */
import type { ResolvedSampling } from '../sampling/sampling-params';
import type { FinishReason, GenerationEvent, SampledToken, TopLogprob } from '../generate/types';
import { placeholderIds, placeholderText } from './cpu-gguf';
import { llamaSampling } from './llama-sampling';

/** llama.cpp's logprob entry of one streamed token (`completion_probabilities` in OpenAI's shape). */
interface FrameLogprob {
  id: number;
  logprob: number;
  top_logprobs?: { id: number; logprob: number }[];
}

/** One streamed frame of an OpenAI-style text completion, as wllama hands it over. */
export interface CompletionFrame {
  choices: { text: string; finish_reason: string | null; logprobs: { content: FrameLogprob[] | null } | null }[];
}

/** Runs one llama.cpp completion (wllama's createCompletion in the app), calling `onFrame` per frame. */
export type CompleteFn = (body: Record<string, unknown>, onFrame: (frame: CompletionFrame) => void, signal: AbortSignal) => Promise<void>;

export interface ChoiceJob {
  index: number;
  promptTokenIds: readonly number[];
  sampling: ResolvedSampling;
  /** The SamplingParams' own fields the finish needs. */
  eosTokenIds: readonly number[];
  ignoreEos: boolean;
  stopTokenIds: readonly number[];
  maxTokens: number;
  /** Ids banned at every step (single-token bad_words). */
  bannedTokenIds: readonly number[];
  vocabSize: number;
  /** llama.cpp's context length (n_ctx). */
  contextLength: number;
  /** The response shows logprobs. */
  logprobs: boolean;
}

/** -9999: the floor the engine reports logprobs with (vLLM's). */
const LOGPROB_FLOOR = -9999;
const floor = (v: number) => Math.fround(Math.max(Number.isFinite(v) ? v : LOGPROB_FLOOR, LOGPROB_FLOOR));

/** vLLM's top_logprobs order: the sampled token first, then the best others, k in all. */
function sampledFirst(sampled: TopLogprob, byRank: readonly TopLogprob[], k: number): TopLogprob[] {
  if (k === 0) return [];
  return [sampled, ...byRank.filter((t) => t.id !== sampled.id)].slice(0, k);
}

/** The tokens of one frame: ids from its logprobs when it has them, else from its placeholder text. */
function frameTokens(frame: CompletionFrame, top: number): SampledToken[] {
  const choice = frame.choices[0];
  if (!choice) return [];
  const content = choice.logprobs?.content;
  if (content && content.length > 0) {
    return content.map((c) => {
      const sampled = { id: c.id, logprob: floor(c.logprob) };
      const byRank = (c.top_logprobs ?? []).map((t) => ({ id: t.id, logprob: floor(t.logprob) }));
      return { ...sampled, topLogprobs: sampledFirst(sampled, byRank, top) };
    });
  }
  // Without logprobs the sampled token's logprob is not computed (the response shows none).
  return placeholderIds(choice.text).map((id) => ({ id, logprob: 0, topLogprobs: [] }));
}

/**
 * Runs the choice to its end, pushing its events; resolves when it has finished (or was aborted:
 * then without a `finished` event, as the scheduler drops an aborted sequence).
 */
export async function runChoice(
  job: ChoiceJob,
  complete: CompleteFn,
  push: (e: GenerationEvent) => void,
  signal: AbortSignal,
): Promise<void> {
  const s = job.sampling;
  const eos = new Set(job.ignoreEos ? [] : job.eosTokenIds);
  const stopIds = new Set(job.stopTokenIds);
  const generated: number[] = [];
  // An object, not a `let`: the frame callback sets it (TypeScript does not follow that into the loop).
  const end: { finish: { reason: FinishReason; stopTokenId: number | null } | null; llamaReason: string | null } = {
    finish: null,
    llamaReason: null,
  };
  const phases = s.minTokens > 0 && s.minTokensStopIds.length > 0 ? (['min-tokens', 'free'] as const) : (['free'] as const);

  for (const [p, phase] of phases.entries()) {
    const budget = (phase === 'min-tokens' ? Math.min(s.minTokens, job.maxTokens) : job.maxTokens) - generated.length;
    if (budget <= 0) continue;
    const sampling = llamaSampling(s, { phase, vocabSize: job.vocabSize, contextLength: job.contextLength, logprobs: job.logprobs });
    for (const id of job.bannedTokenIds) sampling.logit_bias.push([id, false]);
    // A second completion continues the same choice: another seed, so its draws do not repeat the first's.
    if (p > 0) sampling.seed = (sampling.seed + 0x9e3779b9 * p) >>> 0;
    const phaseAbort = new AbortController();
    const onAbort = () => phaseAbort.abort();
    signal.addEventListener('abort', onAbort, { once: true });
    end.llamaReason = null;
    try {
      await complete(
        {
          prompt: placeholderText([...job.promptTokenIds, ...generated]),
          n_predict: budget,
          ignore_eos: job.ignoreEos,
          cache_prompt: true,
          ...sampling,
        },
        (frame) => {
          if (end.finish || phaseAbort.signal.aborted) return;
          end.llamaReason = frame.choices[0]?.finish_reason ?? end.llamaReason;
          for (const token of frameTokens(frame, s.topLogprobs)) {
            generated.push(token.id);
            push({ type: 'tokens', choice: job.index, tokens: [token] });
            const isEos = eos.has(token.id);
            if (isEos || stopIds.has(token.id)) end.finish = { reason: 'stop', stopTokenId: isEos ? null : token.id };
            else if (generated.length >= job.maxTokens) end.finish = { reason: 'length', stopTokenId: null };
            if (end.finish) {
              phaseAbort.abort();
              return;
            }
          }
        },
        phaseAbort.signal,
      );
    } catch (err) {
      if (!phaseAbort.signal.aborted) throw err;
    } finally {
      signal.removeEventListener('abort', onAbort);
    }
    if (signal.aborted) return;
    if (end.finish) break;
    // llama.cpp ended on its own: at its EOS with ignore_eos off (already a finish above), at
    // n_predict (the next phase, or max_tokens), or at its context's end.
    if (phase === 'free' || end.llamaReason !== 'length') end.finish = { reason: 'length', stopTokenId: null };
  }
  const finish = end.finish ?? { reason: 'length', stopTokenId: null };
  push({ type: 'finished', choice: job.index, reason: finish.reason, stopTokenId: finish.stopTokenId });
}
