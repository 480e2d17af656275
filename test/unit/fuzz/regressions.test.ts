// What the mutation fuzzing in this folder found, one focused test each: a hostile field that
// crashed a parser with a TypeError or RangeError, made it allocate or work in proportion to a
// number the file claims, slipped past a check, or was refused with a library's internal message
// naming the wrong file; each is now refused at load with the parser's error naming the field.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ChatTemplateError, ChatTemplates } from '../../../src/engine/model/text/chat-template';
import { ConfigError } from '../../../src/engine/model/config/fields';
import { parseModelConfig } from '../../../src/engine/model/config/hf-config';
import { ModelTokenizer } from '../../../src/engine/model/text/tokenizer';
import { TokenizerError } from '../../../src/engine/model/text/tokenizer-checks';

const json = (url: string) => JSON.parse(readFileSync(new URL(url, import.meta.url), 'utf8'));
const tokenizerJson = json('../../../public/models/tiny-chat/tokenizer.json');
const qwenConfig = json('../model/fixtures/qwen3-0.6b.config.json');

describe('config.json', () => {
  it('refuses a num_hidden_layers of 2^63 or 1e308 (per-layer arrays threw RangeError: Invalid array length)', () => {
    for (const layers of [2 ** 63, 1e308, 2 ** 32]) {
      expect(() => parseModelConfig({ ...qwenConfig, num_hidden_layers: layers })).toThrow(ConfigError);
      expect(() => parseModelConfig({ ...qwenConfig, num_hidden_layers: layers })).toThrow(/"num_hidden_layers" must be at most 4096/);
    }
  });

  it('refuses sizes beyond 2^31 - 1 that Number.isInteger accepts', () => {
    expect(() => parseModelConfig({ ...qwenConfig, vocab_size: 1e308 })).toThrow(/"vocab_size" must be at most 2147483647/);
    expect(parseModelConfig({ ...qwenConfig, max_position_embeddings: 2 ** 31 - 1 }).maxPositionEmbeddings).toBe(2 ** 31 - 1);
  });
});

describe('tokenizer.json', () => {
  const withVocab = (id: number) => {
    const tj = structuredClone(tokenizerJson);
    tj.model.vocab['hostile'] = id;
    return tj;
  };

  it('refuses a token id past the cap (one id of 2^28 took 12 s and gigabytes to build the tables)', () => {
    expect(() => ModelTokenizer.fromJson(withVocab(2 ** 28))).toThrow(TokenizerError);
    expect(() => ModelTokenizer.fromJson(withVocab(2 ** 28))).toThrow(
      /model\.vocab\["hostile"\] has id 268435456; ids are integers from 0 to/,
    );
    expect(() => ModelTokenizer.fromJson(withVocab(-1))).toThrow(TokenizerError);
    expect(() => ModelTokenizer.fromJson(withVocab(1.5))).toThrow(TokenizerError);
  });

  it('refuses added_tokens that are not a list of {id, content}', () => {
    expect(() => ModelTokenizer.fromJson({ ...tokenizerJson, added_tokens: { a: 1 } })).toThrow(/"added_tokens" must be a list/);
    expect(() => ModelTokenizer.fromJson({ ...tokenizerJson, added_tokens: [{ id: 1 }] })).toThrow(/added_tokens\[0\] must be an object/);
    expect(() => ModelTokenizer.fromJson({ ...tokenizerJson, added_tokens: [{ id: 2 ** 40, content: 'x' }] })).toThrow(
      /added_tokens\[0\] has id/,
    );
  });

  it('refuses tokenizer_config.json additional_special_tokens that is not a list, naming that file', () => {
    for (const tokens of [5, 'abc', { a: 1 }]) {
      expect(() => ModelTokenizer.fromJson(tokenizerJson, { additional_special_tokens: tokens })).toThrow(
        /^tokenizer_config\.json: "additional_special_tokens" must be a list$/,
      );
    }
  });

  it('names a malformed model.vocab, model.merges, added_tokens or Sequence list (the library threw TypeError text)', () => {
    const refuse = (tj: unknown, message: RegExp) => expect(() => ModelTokenizer.fromJson(tj)).toThrow(message);
    refuse({ ...tokenizerJson, model: { ...tokenizerJson.model, vocab: undefined } }, /"model\.vocab" must be an object of token ids/);
    refuse({ ...tokenizerJson, model: { ...tokenizerJson.model, merges: 0 } }, /"model\.merges" must be a list/);
    refuse({ ...tokenizerJson, model: { ...tokenizerJson.model, merges: undefined } }, /"model\.merges" must be a list/);
    refuse({ ...tokenizerJson, model: { ...tokenizerJson.model, merges: [0] } }, /model\.merges\[0\] must be "a b" or \["a", "b"\]/);
    refuse({ ...tokenizerJson, added_tokens: undefined }, /"added_tokens" must be a list \(possibly empty\)/);
    refuse(
      { ...tokenizerJson, pre_tokenizer: { type: 'Sequence', pretokenizers: {} } },
      /pre_tokenizer is a Sequence without its list of steps/,
    );
  });

  it('refuses at load a tokenizer that fails on text (a post-processor `single: 5` loaded, then every prompt threw)', () => {
    const tj = { ...tokenizerJson, post_processor: { type: 'TemplateProcessing', single: 5 } };
    expect(() => ModelTokenizer.fromJson(tj)).toThrow(TokenizerError);
    expect(() => ModelTokenizer.fromJson(tj)).toThrow(
      /^tokenizer\.json: the tokenizer fails on sample text: a field of its .*post-processor or decoder has the wrong type$/,
    );
  });

  it('refuses a Split step whose behavior is not a string, naming it (it loaded, then every prompt threw a TypeError)', () => {
    const tj = structuredClone(tokenizerJson);
    tj.pre_tokenizer.pretokenizers.unshift({ type: 'Split', pattern: { String: ' ' }, behavior: 5, invert: false });
    expect(() => ModelTokenizer.fromJson(tj)).toThrow(TokenizerError);
    expect(() => ModelTokenizer.fromJson(tj)).toThrow(/^tokenizer\.json: pre_tokenizer\.pretokenizers\[0\]\.behavior must be a string$/);
  });

  it('refuses a regex bomb nested below the depth the hazard check looked at (it was skipped, not refused)', () => {
    let step: unknown = { type: 'Split', pattern: { Regex: '(a|a)*b' }, behavior: 'Isolated', invert: false };
    for (let i = 0; i < 20; i++) step = { type: 'Sequence', pretokenizers: [step] };
    expect(() => ModelTokenizer.fromJson({ ...tokenizerJson, pre_tokenizer: step })).toThrow(TokenizerError);
    expect(() => ModelTokenizer.fromJson({ ...tokenizerJson, pre_tokenizer: step })).toThrow(/nests steps more than 16 deep/);
  });

  it('refuses a pattern that is neither {Regex} nor {String} (the library dropped the step with a warning)', () => {
    const tj = structuredClone(tokenizerJson);
    tj.pre_tokenizer.pretokenizers.unshift({ type: 'Split', pattern: {}, behavior: 'Isolated', invert: false });
    expect(() => ModelTokenizer.fromJson(tj)).toThrow(
      /pre_tokenizer\.pretokenizers\[0\]\.pattern must be \{"Regex": "\.\.\."\} or \{"String": "\.\.\."\}/,
    );
  });
});

describe('chat templates', () => {
  it('says a template cut inside a block does not compile, not "Cannot read properties of undefined"', () => {
    const templates = new ChatTemplates(null, '{% for m in messages %}{{ m.content }}', {});
    expect(templates.problem).toBe('chat template does not compile: it ends inside an unclosed tag or block');
    expect(() => templates.forRequest()).toThrow(ChatTemplateError);
  });
});
