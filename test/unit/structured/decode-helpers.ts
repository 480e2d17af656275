// Shared by the structured-output tests: the bundled models as StructuredModels (their real
// tokenizers), the allowed ids of a bitmask, and a simulated decode that stands in for the
// sampler: at each step it reads the grammar's bitmask and picks a random allowed token (seeded),
// so the property "a finished constrained output parses and validates" is tested without a GPU.
import type { TokenConstraint } from '../../../src/engine/generate/types';
import type { StructuredModel } from '../../../src/service/structured/grammar-compiler';
import { rng, servedModel } from '../chat/fixtures';

export { rng };

export type BundledModel = 'tiny-chat' | 'tiny-qwen2' | 'tiny-qwen3';

/** A bundled model's tokenizer, config vocab_size (optionally padded) and EOS ids. */
export async function structuredModel(name: BundledModel, padTo?: number): Promise<StructuredModel> {
  const served = await servedModel(name);
  return { tokenizer: served.tokenizer, vocabSize: padTo ?? served.config.vocabSize, eosTokenIds: served.eosTokenIds };
}

export function bitmaskWords(vocabSize: number): Int32Array {
  return new Int32Array(Math.ceil(vocabSize / 32));
}

/** The ids whose bit is set. */
export function allowedIds(bitmask: Int32Array, vocabSize: number): number[] {
  const ids: number[] = [];
  for (let id = 0; id < vocabSize; id++) if ((bitmask[id >>> 5] >>> (id & 31)) & 1) ids.push(id);
  return ids;
}

/** The ids the constraint allows next (every id when it returns false). */
export function nextAllowed(constraint: TokenConstraint, vocabSize: number): number[] {
  const bitmask = bitmaskWords(vocabSize);
  if (!constraint.fillNextTokenBitmask(bitmask)) return Array.from({ length: vocabSize }, (_, i) => i);
  return allowedIds(bitmask, vocabSize);
}

const closingCache = new WeakMap<object, Set<number>>();

/** Stop ids and ids whose text holds a quote, bracket or brace. */
function closingIds(model: StructuredModel): Set<number> {
  let set = closingCache.get(model.tokenizer);
  if (!set) {
    set = new Set(model.eosTokenIds);
    for (let id = 0; id < model.tokenizer.vocabSize; id++) if (/["\]}]/.test(model.tokenizer.decode([id]))) set.add(id);
    closingCache.set(model.tokenizer, set);
  }
  return set;
}

export interface DecodeResult {
  ids: number[];
  /** The output text without the final stop token. */
  text: string;
  /** The grammar accepted a stop token (the engine would finish with "stop"). */
  terminated: boolean;
}

/**
 * A sampler that knows nothing but the bitmask: each step picks a uniformly random allowed id,
 * except that with probability `closeBias` it prefers ids whose text closes something (a quote,
 * bracket or brace) or a stop id, so that walks through free-text strings end in a few hundred
 * steps. Every picked id must be accepted by the constraint.
 */
export function randomDecode(
  constraint: TokenConstraint,
  model: StructuredModel,
  seed: number,
  maxSteps = 1500,
  closeBias = 0.4,
): DecodeResult {
  const random = rng(seed);
  const closing = closingIds(model);
  const ids: number[] = [];
  const closes = (id: number) => closing.has(id);
  for (let step = 0; step < maxSteps && !constraint.isTerminated(); step++) {
    const allowed = nextAllowed(constraint, model.vocabSize);
    if (allowed.length === 0) throw new Error(`no token allowed after ${JSON.stringify(model.tokenizer.decode(ids))}`);
    let pool = allowed;
    if (random() < closeBias) {
      const closers = allowed.filter(closes);
      if (closers.length > 0) pool = closers;
    }
    const id = pool[Math.floor(random() * pool.length)];
    if (!constraint.acceptToken(id)) throw new Error(`the constraint refused id ${id} it allowed`);
    ids.push(id);
  }
  const terminated = constraint.isTerminated();
  const body = terminated ? ids.slice(0, -1) : ids;
  return { ids, text: model.tokenizer.decode(body), terminated };
}

/** Feeds a text's tokens; the index of the first refused token, or -1 when all were accepted. */
export function feedText(constraint: TokenConstraint, model: StructuredModel, text: string): number {
  const ids = model.tokenizer.encode(text, { addSpecialTokens: false });
  for (let i = 0; i < ids.length; i++) if (!constraint.acceptToken(ids[i])) return i;
  return -1;
}

/** Feeds the text then a stop token: true when the grammar accepts the whole document. */
export function acceptsDocument(constraint: TokenConstraint, model: StructuredModel, text: string): boolean {
  if (feedText(constraint, model, text) !== -1) return false;
  return constraint.acceptToken(model.eosTokenIds[0]) && constraint.isTerminated();
}
