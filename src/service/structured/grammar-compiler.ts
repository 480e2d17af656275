/**
 * Compiling a structured-output constraint for one model's vocabulary with xgrammar, once: the
 * compiled grammar (its token-mask cache is the expensive part, up to a second for a 150k
 * vocabulary) is kept per tokenizer in an LRU keyed by the constraint's canonical text, so a
 * repeated schema costs nothing. A constraint xgrammar refuses becomes a ConstraintError (400)
 * with vLLM's wording and xgrammar's reason.
 *
 * Not here: reading the request (constraint-spec.ts), per-sequence matching (grammar-matcher.ts).
 */
import type { CompiledGrammar, GrammarCompiler, TokenizerInfo } from '@mlc-ai/web-xgrammar';
import type { ModelTokenizer } from '../../engine/model/text/tokenizer';
import { JSON_WHITESPACE_LIMIT, type Constraint, type JsonWhitespace, type StructuredOutputSpec } from './constraint-spec';
import { choiceGrammar, ebnfString, withBoundedNumbers, withWhitespace } from './ebnf';
import { RegexSyntaxError, regexToEbnf } from './regex-ebnf';
import { ConstraintError } from './errors';
import { grammarOverBudget } from './grammar-budget';
import { GrammarConstraint, type GrammarConstraintOptions } from './grammar-matcher';
import { extractHearthRules, unsupportedJsonSchemaFeature, withoutAdditionalProperties } from './json-schema-support';
import { LruCache } from './lru-cache';
import { mapJsonSchemas } from './structural-tag';
import { xgrammarVocab } from './tokenizer-info';
import { Utf8Guard } from './utf8-guard';
import { XGrammarError, XGrammarRuntime, type BindingRef, type XGrammarLib } from './xgrammar-runtime';

/** The model facts a grammar depends on. */
export interface StructuredModel {
  tokenizer: ModelTokenizer;
  /** config.json vocab_size: the logits width. */
  vocabSize: number;
  /** The ids that end a completed grammar (ServedModel.eosTokenIds). */
  eosTokenIds: readonly number[];
}

/** Compiled grammars kept per tokenizer (and vocab size and stop ids). */
export const GRAMMAR_CACHE_SIZE = 32;

/** A constraint compiled for one model: it makes one matcher per sequence. */
export class CompiledConstraint {
  constructor(
    readonly spec: StructuredOutputSpec,
    readonly vocabSize: number,
    private readonly grammar: CompiledGrammar,
    /** The binding of the instance that compiled `grammar`. */
    private readonly binding: BindingRef,
    private readonly guard: Utf8Guard,
  ) {}

  /** A fresh matcher at the start of the grammar (implements the engine's TokenConstraint). */
  createConstraint(options: GrammarConstraintOptions = {}): GrammarConstraint {
    return new GrammarConstraint(
      XGrammarRuntime.createMatcherHandle(this.binding, this.grammar, -1),
      this.binding,
      this.vocabSize,
      this.guard,
      options,
    );
  }
}

/** xgrammar's objects for one vocabulary, valid for one runtime generation. */
interface VocabularyGrammars {
  generation: number;
  guard: Utf8Guard;
  info: TokenizerInfo;
  compiler: GrammarCompiler;
  grammars: LruCache<string, CompiledGrammar>;
}

const byTokenizer = new WeakMap<ModelTokenizer, Map<string, VocabularyGrammars>>();

/** Compiles found in the cache (hits) or made (misses) since the process started: for diagnostics and benchmarks. */
export const grammarCacheStats = { hits: 0, misses: 0 };

/** Compiles (or finds in the cache) the grammar of `spec` for `model`. Throws ConstraintError. */
export async function compileStructuredOutput(spec: StructuredOutputSpec, model: StructuredModel): Promise<CompiledConstraint> {
  // The compile cannot be interrupted: what would make it run long is refused first (grammar-budget.ts).
  const overBudget = grammarOverBudget(spec.constraint);
  if (overBudget) throw new ConstraintError(`${spec.param}: ${overBudget}.`, spec.param.split(/[ .]/)[0]);
  const runtime = await XGrammarRuntime.load();
  try {
    return await runtime.run(async (lib, generation) => {
      const vocab = await vocabularyGrammars(lib, generation, model);
      let grammar = vocab.grammars.get(spec.key);
      if (grammar) {
        grammarCacheStats.hits++;
      } else {
        grammar = await compile(lib, vocab.compiler, spec.constraint);
        vocab.grammars.set(spec.key, grammar);
        grammarCacheStats.misses++;
      }
      return new CompiledConstraint(spec, model.vocabSize, grammar, runtime.bindingRef(), vocab.guard);
    });
  } catch (e) {
    if (!(e instanceof XGrammarError)) throw e;
    throw new ConstraintError(refusal(spec.constraint, e.reason), spec.param.split(/[ .]/)[0]);
  }
}

async function vocabularyGrammars(lib: XGrammarLib, generation: number, model: StructuredModel): Promise<VocabularyGrammars> {
  let perTokenizer = byTokenizer.get(model.tokenizer);
  if (!perTokenizer) byTokenizer.set(model.tokenizer, (perTokenizer = new Map()));
  const key = `${model.vocabSize}:${[...model.eosTokenIds].sort((a, b) => a - b).join(',')}`;
  const found = perTokenizer.get(key);
  if (found && found.generation === generation) return found;
  // Objects of an older generation belong to a replaced instance: let them go with it.
  found?.grammars.forget();
  const v = xgrammarVocab(model.tokenizer, { vocabSize: model.vocabSize, stopTokenIds: model.eosTokenIds });
  const info = await lib.TokenizerInfo.createTokenizerInfo(v.encodedVocab, v.vocabType, v.prependSpace, v.vocabSize, v.stopTokenIds);
  // xgrammar's own cache stays off: after an abort its pending entry would hang the next compile.
  const compiler = await lib.GrammarCompiler.createGrammarCompiler(info, false);
  const guard = Utf8Guard.of(model.tokenizer, model.vocabSize, v.vocabType, v.stopTokenIds);
  const entry: VocabularyGrammars = { generation, guard, info, compiler, grammars: new LruCache(GRAMMAR_CACHE_SIZE, (g) => g.dispose()) };
  perTokenizer.set(key, entry);
  return entry;
}

async function compile(lib: XGrammarLib, compiler: GrammarCompiler, c: Constraint): Promise<CompiledGrammar> {
  switch (c.kind) {
    case 'json':
      return compiler.compileGrammar(await jsonSchemaEbnf(lib, c.schema, c.whitespace, c.disableAdditionalProperties));
    case 'regex':
      // Hearth's translation, not xgrammar's: its classes are sound for non-ASCII text
      // (regex-ebnf.ts), and a bad pattern is refused without aborting the WASM instance.
      return compiler.compileGrammar(`root ::= ${regexExpression(c.pattern)}`);
    case 'choice':
      return compiler.compileGrammar(choiceGrammar(c.choices));
    case 'grammar':
      return compiler.compileGrammar(c.ebnf);
    case 'structural_tag': {
      // A structural tag's JSON is compact, like every JSON grammar by default (constraint-spec.ts).
      const tag = await mapJsonSchemas(c.tag, async (schema) => ({
        type: 'grammar',
        grammar: await jsonSchemaEbnf(lib, schema, { type: 'none' }, false),
      }));
      return compiler.compileStructuralTag(JSON.stringify(tag));
    }
  }
}

/**
 * A JSON schema as EBNF: xgrammar's converter, then Hearth's rewrites (digits bounded, its own
 * rules for bounded numbers and constrained strings, the whitespace pattern).
 */
async function jsonSchemaEbnf(
  lib: XGrammarLib,
  schema: unknown,
  whitespace: JsonWhitespace,
  disableAdditionalProperties: boolean,
): Promise<string> {
  const unsupported = unsupportedJsonSchemaFeature(schema);
  if (unsupported)
    throw new ConstraintError(
      `The provided JSON schema contains features not supported by xgrammar: ${unsupported}.`,
      'structured_outputs',
    );
  const base = disableAdditionalProperties ? withoutAdditionalProperties(schema) : schema;
  const extracted = extractHearthRules(base, Math.random().toString(36).slice(2, 10));
  // indent -1 is Python's indent=None: one line, with ", " and ": " when whitespace is fixed.
  let ebnf = withBoundedNumbers(
    await lib.Testings._jsonSchemaToEBNF(JSON.stringify(extracted.schema), whitespace.type !== 'none', -1, undefined, true),
  );
  for (const rule of extracted.rules) {
    // The converter writes a string constant as this literal (the JSON text, quoted for EBNF).
    const literal = ebnfString(JSON.stringify(rule.placeholder));
    if (!ebnf.includes(literal)) continue;
    ebnf = `${ebnf.split(literal).join(rule.rule)}\n${rule.rule} ::= ${rule.ebnf}\n`;
  }
  if (whitespace.type === 'pattern') ebnf = withWhitespace(ebnf, regexExpression(whitespace.pattern, 'whitespace_pattern'));
  // Bounded here, not with the converter's maxWhitespaceCnt: 0.1.27 leaves `[ \n\t]*` in its
  // basic_array and basic_object rules whatever the count.
  if (whitespace.type === 'any') ebnf = withWhitespace(ebnf, `[ \\n\\t]{0,${JSON_WHITESPACE_LIMIT}}`);
  return ebnf;
}

/** A pattern as EBNF; a bad one is the request's error, naming what the pattern was given as. */
function regexExpression(pattern: string, what = 'regex'): string {
  try {
    return regexToEbnf(pattern);
  } catch (e) {
    if (e instanceof RegexSyntaxError)
      throw new ConstraintError(`Failed to transform ${what} into a grammar: ${e.message}`, 'structured_outputs');
    throw e;
  }
}

/** vLLM's messages for a constraint its backend refuses, with xgrammar's reason. */
function refusal(c: Constraint, reason: string): string {
  switch (c.kind) {
    case 'json':
      return `Failed to transform json schema into a grammar: ${reason}`;
    case 'regex':
      return `Failed to transform regex into a grammar: ${reason}`;
    case 'choice':
      return `Failed to transform choices into a grammar: ${reason}`;
    case 'grammar':
      return `Invalid grammar specification: ${reason}`;
    case 'structural_tag':
      return `Invalid structural tag specification: ${reason}`;
  }
}
