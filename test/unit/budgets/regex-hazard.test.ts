// Patterns from files (issue 10): the published tokenizer patterns and PEFT's usual
// target_modules patterns pass the hazard check; the catastrophic-backtracking shapes are refused
// with a reason, and a tokenizer.json or adapter_config.json holding one is refused naming the
// file and field before the pattern ever runs.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { regexHazard } from '../../../src/engine/model/text/regex-hazard';
import { ModelTokenizer } from '../../../src/engine/model/text/tokenizer';
import { TokenizerError } from '../../../src/engine/model/text/tokenizer-checks';
import { AdapterError, parseAdapterConfig } from '../../../src/service/adapters/parse';

const PUBLISHED = {
  gpt2: "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+",
  llama3:
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
  qwen2: "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
  o200k:
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
  deepseek: '[\\r\\n]|\\s?[A-Za-z\\u00C0-\\u024F]+|\\s?[!-/:-~！-／：-～‘-‟　-。]+|\\s+$|[一-龥ࠀ-一가-퟿]+|\\p{N}',
  metaspace: '▁',
  peftTargets: '.*\\.(q_proj|k_proj|v_proj|o_proj)',
  peftLayers: 'model\\.layers\\.[0-9]+\\.self_attn\\.(q|v)_proj',
};

describe('regexHazard', () => {
  it.each(Object.entries(PUBLISHED))('accepts the published pattern %s', (_, pattern) => {
    expect(regexHazard(pattern)).toBeNull();
  });

  it.each([
    ['(.|.|.|.)*X', /alternation/],
    ['(a+)+b', /quantifier/],
    ['(?:a*)*', /quantifier/],
    ['((ab)|c){2,}', /alternation/],
    ['(x(a|b))+y', /alternation/],
    ['(a)\\1', /backreferences/],
    ['(?<w>a)\\k<w>', /backreferences/],
    ['a*b*c*', /more than 2 unbounded/],
    ['a{1,5000}', /over the limit of 1000/],
    // Issue 26: bounded quantifiers with a long range backtrack as unbounded ones do.
    ['.{0,999}'.repeat(12) + 'x', /more than 2 unbounded or long \(over 16 repeats\) quantifiers/],
    ['a{0,17}b{0,17}c{0,17}', /more than 2 unbounded or long/],
    ['(?:x+|y)(?:x+|y)(?:x+|y)', /more than 2 unbounded or long/],
    // Short choices multiply along one alternative, and alternatives add up.
    ['a?'.repeat(9), /multiply to more than 256 ways/],
    ['(?:a|b)'.repeat(9) + 'c', /multiply to more than 256 ways/],
    ['a{0,16}'.repeat(2) + 'b{0,2}', /multiply to more than 256 ways/],
    [Array.from({ length: 20 }, () => 'a{0,15}').join('|'), /add up to more than 256 ways/],
  ])('refuses %s', (pattern, reason) => {
    expect(regexHazard(pattern)).toMatch(reason);
  });

  it('accepts short bounded choices up to the limit, and one or two long quantifiers', () => {
    expect(regexHazard('a?'.repeat(8))).toBeNull();
    expect(regexHazard('.{0,999}')).toBeNull();
    expect(regexHazard('.{0,999}x.{0,999}')).toBeNull();
    expect(regexHazard('(?:ab){0,16}')).toBeNull();
    expect(regexHazard('(?:a|b)(?:c|d)?e{1,3}')).toBeNull();
  });

  it('refuses a pattern over the length cap', () => {
    expect(regexHazard('a'.repeat(1025))).toMatch(/1025 characters long, over the limit of 1024/);
  });

  it('reads escapes and classes as single items', () => {
    expect(regexHazard('[(|)]+\\(\\|\\)*')).toBeNull();
    expect(regexHazard('\\p{L}{1,3}[]a]+')).toBeNull();
    expect(regexHazard('(\\p{L}+)+')).toMatch(/quantifier/);
  });
});

describe('files holding patterns', () => {
  const tokenizerJson = JSON.parse(readFileSync(new URL('../../../public/models/tiny-chat/tokenizer.json', import.meta.url), 'utf8'));

  it('a tokenizer.json Split pattern that backtracks catastrophically is refused at load, naming the field', () => {
    const hostile = structuredClone(tokenizerJson);
    hostile.pre_tokenizer.pretokenizers.unshift({ type: 'Split', pattern: { Regex: '(a|a)*b' }, behavior: 'Isolated', invert: false });
    expect(() => ModelTokenizer.fromJson(hostile)).toThrow(TokenizerError);
    expect(() => ModelTokenizer.fromJson(hostile)).toThrow(
      /^tokenizer\.json: pre_tokenizer\.pretokenizers\[0\]\.pattern\.Regex is refused: .*alternation/,
    );
    const replace = structuredClone(tokenizerJson);
    replace.normalizer = { type: 'Replace', pattern: { Regex: '(\\s+)+$' }, content: '' };
    expect(() => ModelTokenizer.fromJson(replace)).toThrow(/normalizer\.pattern\.Regex is refused/);
  });

  it('a Split with bounded quantifiers that backtrack like unbounded ones is refused at load, naming the field', () => {
    const hostile = structuredClone(tokenizerJson);
    hostile.pre_tokenizer.pretokenizers.unshift({
      type: 'Split',
      pattern: { Regex: '.{0,999}'.repeat(12) + 'x' },
      behavior: 'Isolated',
      invert: false,
    });
    expect(() => ModelTokenizer.fromJson(hostile)).toThrow(
      /^tokenizer\.json: pre_tokenizer\.pretokenizers\[0\]\.pattern\.Regex is refused: more than 2 unbounded or long/,
    );
  });

  it('the pattern checked is the one the library runs: its rewrite of Oniguruma escapes', () => {
    // The file's text has no alternation, but the library runs `\b` as an alternation of
    // lookarounds, here inside a repeated group.
    expect(regexHazard('(?:\\bx)+')).toBeNull();
    const rewritten = structuredClone(tokenizerJson);
    rewritten.normalizer = { type: 'Replace', pattern: { Regex: '(?:\\bx)+' }, content: '' };
    expect(() => ModelTokenizer.fromJson(rewritten)).toThrow(/^tokenizer\.json: normalizer\.pattern\.Regex is refused: .*alternation/);
  });

  it('a safe Split pattern still loads and tokenizes', () => {
    const safe = structuredClone(tokenizerJson);
    safe.pre_tokenizer.pretokenizers.unshift({ type: 'Split', pattern: { Regex: PUBLISHED.qwen2 }, behavior: 'Isolated', invert: false });
    const tok = ModelTokenizer.fromJson(safe);
    expect(tok.decode(tok.encode('What is 3 + 4?', { addSpecialTokens: false }))).toBe('What is 3 + 4?');
  });

  it('adapter_config.json target_modules: a safe pattern selects modules, a bomb is refused, r is capped', () => {
    const base = { r: 8, lora_alpha: 16 };
    expect(parseAdapterConfig({ ...base, target_modules: PUBLISHED.peftTargets }).targetModules).toEqual([
      'q_proj',
      'k_proj',
      'v_proj',
      'o_proj',
    ]);
    expect(() => parseAdapterConfig({ ...base, target_modules: '(.|.|.|.)*X' })).toThrow(AdapterError);
    expect(() => parseAdapterConfig({ ...base, target_modules: '(.|.|.|.)*X' })).toThrow(
      /adapter_config\.json: target_modules pattern is refused/,
    );
    expect(() => parseAdapterConfig({ ...base, target_modules: 'q_proj|' + 'x'.repeat(300) })).toThrow(/over the limit of 256/);
    expect(() => parseAdapterConfig({ ...base, target_modules: '.{0,999}'.repeat(12) + 'x' })).toThrow(
      /adapter_config\.json: target_modules pattern is refused \(more than 2 unbounded or long/,
    );
    expect(() => parseAdapterConfig({ ...base, r: 4096, target_modules: ['q_proj'] })).toThrow(/"r" is 4096; .* up to 256/);
  });
});
