/**
 * generation_config.json -> GenerationDefaults: the model author's stop ids and default sampling
 * values. vLLM (`--generation-config auto`) takes exactly these sampling fields from the file as
 * request defaults: temperature, top_p, top_k, min_p, repetition_penalty, max_new_tokens; we keep
 * the same list so a Hearth request without those fields samples as vLLM would.
 * Not here: applying them to a request (the chat service does), config.json (hf-config.ts).
 */
import { ConfigError, FieldReader, tokenIdList } from './fields';

export interface GenerationDefaults {
  /** eos_token_id of generation_config.json (int or list in the file). */
  eosTokenIds: number[];
  bosTokenId: number | null;
  padTokenId: number | null;
  /** Sampling defaults; undefined when the file does not set them. */
  temperature?: number;
  topP?: number;
  topK?: number;
  minP?: number;
  repetitionPenalty?: number;
  maxNewTokens?: number;
}

/** The defaults when a repository has no generation_config.json. */
export const NO_GENERATION_DEFAULTS: GenerationDefaults = { eosTokenIds: [], bosTokenId: null, padTokenId: null };

export function parseGenerationConfig(json: unknown, file = 'generation_config.json'): GenerationDefaults {
  if (json === null || typeof json !== 'object' || Array.isArray(json)) {
    throw new ConfigError(`${file}: expected a JSON object`);
  }
  const c = json as Record<string, unknown>;
  const f = new FieldReader(c, file);
  const out: GenerationDefaults = {
    eosTokenIds: tokenIdList(c.eos_token_id, 'eos_token_id', file),
    bosTokenId: f.tokenIdOrNull('bos_token_id'),
    padTokenId: f.tokenIdOrNull('pad_token_id'),
  };
  const temperature = f.optionalNumber('temperature', 0);
  const topP = f.optionalNumber('top_p', 0);
  const topK = f.optionalInt('top_k', -1);
  const minP = f.optionalNumber('min_p', 0);
  const repetitionPenalty = f.optionalNumber('repetition_penalty', 0);
  const maxNewTokens = f.optionalInt('max_new_tokens', 1);
  if (topP !== undefined && topP > 1) throw new ConfigError(`${file}: "top_p" must be in [0, 1] (got ${topP})`);
  if (minP !== undefined && minP > 1) throw new ConfigError(`${file}: "min_p" must be in [0, 1] (got ${minP})`);
  if (temperature !== undefined) out.temperature = temperature;
  if (topP !== undefined) out.topP = topP;
  if (topK !== undefined) out.topK = topK;
  if (minP !== undefined) out.minP = minP;
  if (repetitionPenalty !== undefined) out.repetitionPenalty = repetitionPenalty;
  if (maxNewTokens !== undefined) out.maxNewTokens = maxNewTokens;
  return out;
}

/** The union of stop ids from every file that declares one, in first-seen order. */
export function unionTokenIds(...lists: ReadonlyArray<readonly number[]>): number[] {
  return [...new Set(lists.flat())];
}
