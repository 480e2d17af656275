// The tokenizer on Hearth's bundled tokenizer.json: known ids worked out by hand from its
// construction and merges, agreement with an independent BPE oracle and encode/decode round trips
// on many strings, special tokens, decoding options, streaming detokenization, logprob strings and
// bad words. The generic (non byte-level) detokenizer path runs on a small SentencePiece-style
// tokenizer built below.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ModelTokenizer } from '../../../src/engine/model/text/tokenizer';
import { oracleEncode, type TokenizerFile } from './bpe-oracle';

const dir = new URL('../../../public/models/tiny-chat/', import.meta.url);
const tokenizerJson = JSON.parse(readFileSync(new URL('tokenizer.json', dir), 'utf8')) as TokenizerFile;
const tokenizerConfig = JSON.parse(readFileSync(new URL('tokenizer_config.json', dir), 'utf8'));
const tok = ModelTokenizer.fromJson(tokenizerJson, tokenizerConfig);
const enc = (s: string) => tok.encode(s, { addSpecialTokens: false });

/** Seeded strings mixing words, digits, whitespace runs, punctuation, accents, CJK and emoji. */
function sampleStrings(n: number, seed = 1): string[] {
  let s = seed;
  const rnd = () => (s = (Math.imul(s, 1103515245) + 12345) >>> 0) / 2 ** 32;
  const atoms = [
    'the',
    ' the',
    'Hello',
    ' world',
    '12345',
    ' 3.14',
    '\n',
    '\n\n',
    '  ',
    '\t',
    'café',
    ' naïve',
    '東京',
    '😀',
    '🚀🚀',
    '{"name": "get_weather"}',
    '<tool_call>',
    '</tool_call>',
    '<think>',
    '<|im_end|>',
    '<|im_start|>',
    'x<|im_end',
    "it's",
    "we'll",
    'ÅÖ',
    '∑',
    '\u00a0',
    'e\u0301',
    'ZZZ',
    'qwxz',
    '—',
    '龘',
    '𝔘',
    '   \n',
    'done.',
  ];
  return Array.from({ length: n }, () =>
    Array.from({ length: 1 + Math.floor(rnd() * 8) }, () => atoms[Math.floor(rnd() * atoms.length)]).join(''),
  );
}

describe('vocabulary and special tokens', () => {
  it('has the sizes and ids the model files declare', () => {
    expect(tok.vocabSize).toBe(4096);
    expect(tok.addedTokens.map((t) => t.content)).toEqual([
      '<|endoftext|>',
      '<|im_start|>',
      '<|im_end|>',
      '<tool_call>',
      '</tool_call>',
      '<think>',
      '</think>',
      '<tool_response>',
      '</tool_response>',
    ]);
    expect(tok.eosTokenId).toBe(2);
    expect(tok.padTokenId).toBe(0);
    expect(tok.bosTokenId).toBeNull();
    // Only the ChatML control tokens are special; tool and thinking tags survive skip_special_tokens.
    expect([...tok.specialTokenIds].sort((a, b) => a - b)).toEqual([0, 1, 2]);
    expect(tok.specialTokens).toMatchObject({ eos_token: '<|im_end|>', pad_token: '<|endoftext|>', bos_token: null });
  });
});

describe('known token ids', () => {
  // Construction (scripts/model-making): ids 0..8 are the added tokens, ids 9..264 the 256 byte
  // symbols in byte order (id = 9 + byte), merge number r creates id 265 + r.
  it('digits are split one by one and never merged: id = 9 + ASCII code', () => {
    expect(enc('1234')).toEqual([58, 59, 60, 61]); // '1' = 0x31 = 49
    expect(enc('2025')).toEqual([59, 57, 59, 62]);
  });

  it('single bytes: space, newline, and a byte of a rare character', () => {
    expect(enc('\n')).toEqual([19]); // 0x0a
    expect(tok.idToToken(41)).toBe('Ġ'); // 0x20: GPT-2's stand-in for a space
    // 龘 (U+9F98) is E9 BE 98 in UTF-8 and never occurs in the corpus: three byte tokens.
    expect(enc('龘')).toEqual([9 + 0xe9, 9 + 0xbe, 9 + 0x98]);
  });

  it('" the" is one token through merges 0, 1 and 6', () => {
    // Merges 0: h+e, 1: Ġ+t, 6: Ġt+he (the trainer's first merges). "Ġ t h e": the lowest-ranked
    // pair is (h,e) -> "Ġ t he"; then (Ġ,t) rank 1 -> "Ġt he"; then (Ġt,he) rank 6 -> "Ġthe" = 265 + 6.
    expect(tokenizerJson.model.merges.slice(0, 7)).toEqual([
      ['h', 'e'],
      ['Ġ', 't'],
      ['r', 'e'],
      ['Ġ', 'a'],
      ['Ġ', 'i'],
      ['Ġ', 's'],
      ['Ġt', 'he'],
    ]);
    expect(enc(' the')).toEqual([271]);
    expect(enc(' the the')).toEqual([271, 271]);
  });

  it('arithmetic: digits single, operators with their leading space', () => {
    const ids = enc('12 + 7 = 19');
    expect(ids.map((i) => tok.idToToken(i))).toEqual(['1', '2', 'Ġ+', 'Ġ', '7', 'Ġ=', 'Ġ', '1', '9']);
    expect(ids[0]).toBe(58);
    expect(ids[4]).toBe(64);
  });

  it('added tokens are atomic wherever they appear', () => {
    expect(enc('<|im_start|>user\nHi<|im_end|>\n')).toEqual([1, tok.tokenToId('user')!, 19, tok.tokenToId('Hi')!, 2, 19]);
    expect(enc('a<think>b</think>')).toEqual([106, 5, 107, 6]);
    expect(enc('<tool_call><tool_call>')).toEqual([3, 3]);
    // An unfinished tag is ordinary text.
    expect(enc('<|im_end')).not.toContain(2);
  });

  it('addSpecialTokens adds nothing: the post-processor is plain ByteLevel (the template adds specials)', () => {
    expect(tok.encode('Hello', { addSpecialTokens: true })).toEqual(enc('Hello'));
    expect(enc('')).toEqual([]);
  });
});

// Hundreds of strings each: well under a second alone; the limits only allow for a loaded machine.
describe('consistency on many strings', () => {
  const samples = sampleStrings(300);

  it('agrees with an independent BPE implementation', { timeout: 30_000 }, () => {
    for (const s of samples) expect(enc(s), JSON.stringify(s)).toEqual(oracleEncode(tokenizerJson, s));
  });

  it('decode(encode(s)) gives s back (NFC-normalized, as the tokenizer normalizes)', { timeout: 30_000 }, () => {
    for (const s of samples) expect(tok.decode(enc(s))).toBe(s.normalize('NFC'));
  });

  it('every id in the vocabulary decodes alone without throwing', { timeout: 30_000 }, () => {
    for (let id = 0; id < tok.vocabSize; id++) expect(typeof tok.tokenText(id)).toBe('string');
  });
});

describe('decode options', () => {
  const ids = enc('<|im_start|>assistant\n<think>hm</think>ok<|im_end|>');

  it('skipSpecialTokens drops ChatML tokens but keeps the thinking tags', () => {
    expect(tok.decode(ids)).toBe('<|im_start|>assistant\n<think>hm</think>ok<|im_end|>');
    expect(tok.decode(ids, { skipSpecialTokens: true })).toBe('assistant\n<think>hm</think>ok');
  });

  it('spacesBetweenSpecialTokens joins text runs and added tokens with one space (vLLM)', () => {
    expect(tok.decode(ids, { spacesBetweenSpecialTokens: true })).toBe('<|im_start|> assistant\n <think> hm </think> ok <|im_end|>');
    expect(tok.decode(ids, { spacesBetweenSpecialTokens: true, skipSpecialTokens: true })).toBe('assistant\n <think> hm </think> ok');
  });

  it('ids outside the tokenizer (padding rows of the embedding) decode to nothing', () => {
    expect(tok.decode([...enc('ab'), 4095 + 10])).toBe('ab');
    expect(tok.decode([])).toBe('');
  });
});

describe('incremental detokenizer', () => {
  const stream = (ids: number[], options = {}) => {
    const d = tok.detokenizer(options);
    const deltas = ids.map((id) => d.push(id));
    deltas.push(d.finish());
    return { deltas, text: d.text };
  };

  it('never emits part of a character: a 3-byte character arrives with its last byte', () => {
    const ids = enc('a龘b');
    expect(ids).toHaveLength(5);
    const { deltas, text } = stream(ids);
    expect(deltas).toEqual(['a', '', '', '龘', 'b', '']);
    expect(text).toBe('a龘b');
  });

  it('ends with the same text as a full decode, for every option combination', { timeout: 30_000 }, () => {
    for (const s of sampleStrings(200, 7)) {
      const ids = enc(s);
      for (const skipSpecialTokens of [false, true]) {
        for (const spacesBetweenSpecialTokens of [false, true]) {
          const options = { skipSpecialTokens, spacesBetweenSpecialTokens };
          const { deltas, text } = stream(ids, options);
          expect(text, JSON.stringify(s)).toBe(tok.decode(ids, options));
          expect(deltas.join('')).toBe(text);
          // No delta ends inside a surrogate pair or with a replacement char the input lacked.
          for (const d of deltas) expect(d).not.toMatch(/[\ud800-\udbff]$/);
          if (!s.includes('\ufffd')) expect(text).not.toContain('\ufffd');
        }
      }
    }
  });

  it('flushes an unfinished character at the end as U+FFFD, like decode', () => {
    const ids = enc('龘').slice(0, 2);
    const { deltas, text } = stream(ids);
    expect(deltas).toEqual(['', '', '\ufffd']);
    expect(text).toBe(tok.decode(ids));
  });
});

describe('logprob token strings and bad words', () => {
  it('tokenText and tokenBytes follow vLLM (each id decoded alone, UTF-8 of that)', () => {
    expect(tok.tokenText(271)).toBe(' the');
    expect(tok.tokenBytes(271)).toEqual([32, 116, 104, 101]);
    expect(tok.tokenText(2)).toBe('<|im_end|>');
    expect(tok.tokenText(9 + 0xe9)).toBe('\ufffd');
    expect(tok.tokenBytes(9 + 0xe9)).toEqual([0xef, 0xbf, 0xbd]);
  });

  it('bad words are tokenised as written and with a leading space when that is a different word token', () => {
    // "user" and " user" are each one token (different ids): both are banned.
    expect(enc('user')).toHaveLength(1);
    expect(enc(' user')).toHaveLength(1);
    expect(tok.badWordsIds(['user'])).toEqual([enc('user'), enc(' user')]);
    // "Paris" is three tokens but " Paris" one: the spaced form is a different length, not added.
    expect(enc('Paris')).toHaveLength(3);
    expect(tok.badWordsIds(['Paris'])).toEqual([enc('Paris')]);
    // "the" is t+he but " the" is one token: a different length, so only the plain form is banned
    // (vLLM's rule). Leading spaces of the word are stripped first.
    expect(enc('the')).toEqual([tok.tokenToId('t'), 265]);
    expect(tok.badWordsIds(['  the'])).toEqual([enc('the')]);
  });
});

describe('generic path: a SentencePiece-style tokenizer (Metaspace, byte fallback)', () => {
  // Byte-fallback tokens <0x00>..<0xFF>, then ▁ and a few letters and merges: the layout of
  // Llama 2 / TinyLlama tokenizer.json files, small enough to write here.
  const vocab: Record<string, number> = { '<unk>': 0, '<s>': 1, '</s>': 2 };
  for (let b = 0; b < 256; b++) vocab[`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`] = 3 + b;
  const pieces = ['▁', 'h', 'e', 'l', 'o', 'w', 'r', 'd', 'he', 'll', '▁he', '▁hell', '▁hello', 'or', 'orl', 'orld', '▁w', '▁world'];
  pieces.forEach((p, i) => (vocab[p] = 259 + i));
  const sp = ModelTokenizer.fromJson(
    {
      version: '1.0',
      added_tokens: [
        { id: 0, content: '<unk>', special: true, single_word: false, lstrip: false, rstrip: false, normalized: false },
        { id: 1, content: '<s>', special: true, single_word: false, lstrip: false, rstrip: false, normalized: false },
        { id: 2, content: '</s>', special: true, single_word: false, lstrip: false, rstrip: false, normalized: false },
      ],
      normalizer: {
        type: 'Sequence',
        normalizers: [
          { type: 'Prepend', prepend: '▁' },
          { type: 'Replace', pattern: { String: ' ' }, content: '▁' },
        ],
      },
      pre_tokenizer: null,
      post_processor: null,
      decoder: {
        type: 'Sequence',
        decoders: [
          { type: 'Replace', pattern: { String: '▁' }, content: ' ' },
          { type: 'ByteFallback' },
          { type: 'Fuse' },
          { type: 'Strip', content: ' ', start: 1, stop: 0 },
        ],
      },
      model: {
        type: 'BPE',
        dropout: null,
        unk_token: '<unk>',
        continuing_subword_prefix: null,
        end_of_word_suffix: null,
        fuse_unk: true,
        byte_fallback: true,
        ignore_merges: false,
        vocab,
        merges: [
          ['h', 'e'],
          ['l', 'l'],
          ['▁', 'he'],
          ['▁he', 'll'],
          ['▁hell', 'o'],
          ['o', 'r'],
          ['or', 'l'],
          ['orl', 'd'],
          ['▁', 'w'],
          ['▁w', 'orld'],
        ],
      },
    },
    { eos_token: '</s>', bos_token: '<s>', unk_token: '<unk>' },
  );

  it('is not byte-level, and its ids decode through byte fallback', () => {
    expect(sp.byteLevel).toBe(false);
    const ids = sp.encode('hello wörld', { addSpecialTokens: false });
    expect(sp.decode(ids)).toBe('hello wörld');
    expect(ids).toContain(vocab['<0xC3>']);
  });

  it('streams to the same text as a full decode, never splitting ö, with the leading space kept mid-text', () => {
    const prompt = sp.encode('hello', { addSpecialTokens: false });
    const ids = sp.encode('hello wörld hello', { addSpecialTokens: false }).slice(prompt.length);
    const d = sp.detokenizer({ promptIds: prompt });
    const deltas = ids.map((id) => d.push(id));
    deltas.push(d.finish());
    expect(d.text).toBe(' wörld hello');
    for (const delta of deltas) expect(delta).not.toContain('\ufffd');
    // Without prompt context the first token's space is stripped, as decode() strips it too.
    const alone = sp.detokenizer();
    for (const id of ids) alone.push(id);
    alone.finish();
    expect(alone.text).toBe(sp.decode(ids));
  });
});
