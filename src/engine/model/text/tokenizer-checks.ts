/**
 * The load-time checks of an untrusted tokenizer.json (issue 26 and before): the ids and lists
 * that size tables or that the library would trip over (checkVocabulary), the shape of its
 * normalizer / pre-tokenizer / decoder steps (checkPatterns), and every Split / Replace pattern as
 * the library compiled it (checkCompiledPatterns, regex-hazard.ts), before its first run.
 *
 * Not here: the tokenizer itself (tokenizer.ts).
 */
import type { Tokenizer } from '@huggingface/tokenizers';
import { regexHazard } from './regex-hazard';

/** tokenizer.json or tokenizer_config.json that cannot be used; the message names the file. */
export class TokenizerError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TokenizerError';
  }
}

type Json = Record<string, unknown>;

/**
 * Caps on what tokenizer.json may claim, far above real vocabularies (Gemma 3: 262k ids). Token ids
 * index tables (here and in the library): an id of 2^28 would make a 2 GB table from one entry.
 * README.md "Budgets for untrusted files and programs" lists it.
 */
export const TOKENIZER_LIMITS = { ids: 1 << 21 } as const;

/**
 * The parts of tokenizer.json that size tables, that this wrapper reads itself, or that the library
 * would trip over with a TypeError: every id an integer below the cap, `model.vocab` present, BPE
 * merges as pairs, `added_tokens` a list of {id, content}. The library checks the rest.
 */
export function checkVocabulary(tj: Json): void {
  const bad = (why: string): never => {
    throw new TokenizerError(`tokenizer.json: ${why}`);
  };
  const checkId = (id: unknown, where: string) => {
    if (!Number.isInteger(id) || (id as number) < 0 || (id as number) >= TOKENIZER_LIMITS.ids) {
      bad(`${where} has id ${JSON.stringify(id)}; ids are integers from 0 to ${TOKENIZER_LIMITS.ids - 1}`);
    }
  };
  const model = tj.model;
  if (!model || typeof model !== 'object' || Array.isArray(model)) bad('"model" must be an object');
  const { vocab, merges } = model as Json;
  if (Array.isArray(vocab)) {
    if (vocab.length > TOKENIZER_LIMITS.ids) bad(`model.vocab has ${vocab.length} entries (at most ${TOKENIZER_LIMITS.ids})`);
  } else if (vocab && typeof vocab === 'object') {
    for (const [token, id] of Object.entries(vocab)) checkId(id, `model.vocab[${JSON.stringify(token.slice(0, 40))}]`);
  } else {
    bad('"model.vocab" must be an object of token ids (or a Unigram list)');
  }
  if ((model as Json).type === 'BPE' && !Array.isArray(merges)) bad('"model.merges" must be a list');
  (Array.isArray(merges) ? merges : []).forEach((m: unknown, i) => {
    const pair = typeof m === 'string' ? m.split(' ') : m;
    if (!Array.isArray(pair) || pair.length !== 2 || !pair.every((p) => typeof p === 'string')) {
      bad(`model.merges[${i}] must be "a b" or ["a", "b"]`);
    }
  });
  const added = tj.added_tokens;
  if (!Array.isArray(added)) bad('"added_tokens" must be a list (possibly empty)');
  (added as unknown[]).forEach((t, i) => {
    if (!t || typeof t !== 'object' || typeof (t as Json).content !== 'string')
      bad(`added_tokens[${i}] must be an object with a "content" string`);
    checkId((t as Json).id, `added_tokens[${i}]`);
  });
}

/**
 * Checks the shape of the normalizer / pre-tokenizer / decoder steps and records where each
 * `pattern.Regex` sits (`where` is the field path, e.g. `pre_tokenizer.pretokenizers[1]`), for
 * checkCompiledPatterns. Steps nested deeper than any real file's (a Sequence in a Sequence) are
 * refused, not skipped: a pattern below the depth looked at would run unchecked. A pattern that is
 * neither {Regex} nor {String} is refused too (the library would warn and drop the step,
 * tokenizing differently from the model's own), and so is a Sequence without its list (the
 * library would fail on it with a TypeError).
 */
export function checkPatterns(step: unknown, where: string, regexSteps: Map<object, string>, depth = 0): void {
  if (!step || typeof step !== 'object') return;
  if (depth > MAX_STEP_DEPTH) throw new TokenizerError(`tokenizer.json: ${where} nests steps more than ${MAX_STEP_DEPTH} deep`);
  if (Array.isArray(step)) {
    step.forEach((s, i) => checkPatterns(s, `${where}[${i}]`, regexSteps, depth + 1));
    return;
  }
  const { type, behavior } = step as Json;
  if (type === 'Sequence' && !SEQUENCE_LISTS.some((k) => Array.isArray((step as Json)[k]))) {
    throw new TokenizerError(`tokenizer.json: ${where} is a Sequence without its list of steps`);
  }
  if (type === 'Split' && typeof behavior !== 'string') throw new TokenizerError(`tokenizer.json: ${where}.behavior must be a string`);
  for (const [key, value] of Object.entries(step as Json)) {
    if (key === 'pattern') {
      const p = (value ?? {}) as Json;
      if (typeof p.Regex === 'string') {
        regexSteps.set(step, where);
      } else if (typeof p.String !== 'string') {
        throw new TokenizerError(`tokenizer.json: ${where}.pattern must be {"Regex": "..."} or {"String": "..."}`);
      }
    } else if (typeof value === 'object') {
      checkPatterns(value, `${where}.${key}`, regexSteps, depth + 1);
    }
  }
}

/**
 * Refuses a Split or Replace step whose pattern could backtrack catastrophically: the library
 * runs it on every prompt (regex-hazard.ts says why the check is at load). What is checked is the
 * RegExp the library compiled, not the file's text: the library rewrites Oniguruma syntax first
 * (`\w`, `\b`, `\A` become classes and lookarounds), and the rewrite is what runs. Each step
 * recorded in `regexSteps` must be found holding its compiled pattern; one that is not (a library
 * version that keeps it elsewhere) is refused rather than left to run unchecked.
 */
export function checkCompiledPatterns(inner: Tokenizer, regexSteps: Map<object, string>): void {
  const unchecked = new Map(regexSteps);
  const seen = new Set<unknown>();
  const visit = (value: unknown, depth: number) => {
    if (!value || (typeof value !== 'object' && typeof value !== 'function') || seen.has(value) || depth > 2 * MAX_STEP_DEPTH) return;
    seen.add(value);
    const { config, pattern } = value as { config?: unknown; pattern?: unknown };
    const where = config && typeof config === 'object' ? unchecked.get(config) : undefined;
    if (where !== undefined && pattern instanceof RegExp) {
      const hazard = regexHazard(pattern.source);
      if (hazard) throw new TokenizerError(`tokenizer.json: ${where}.pattern.Regex is refused: ${hazard}`);
      unchecked.delete(config!);
    }
    for (const child of Array.isArray(value) ? value : Object.values(value)) if (child !== config) visit(child, depth + 1);
  };
  const steps = inner as unknown as Record<string, unknown>;
  for (const part of ['normalizer', 'pre_tokenizer', 'decoder', 'post_processor']) visit(steps[part], 0);
  for (const where of unchecked.values()) {
    throw new TokenizerError(`tokenizer.json: ${where}.pattern.Regex is refused: Hearth cannot find the compiled pattern to check it`);
  }
}

/** Nesting of normalizer / pre-tokenizer / decoder steps looked at; real files nest 3 deep at most. */
const MAX_STEP_DEPTH = 16;
/** Where a Sequence step keeps its steps, by pipeline stage. */
const SEQUENCE_LISTS = ['normalizers', 'pretokenizers', 'decoders', 'processors'];
