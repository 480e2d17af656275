// What xgrammar is told about a vocabulary (the bundled byte-level BPE tokenizers and a
// SentencePiece-style byte-fallback tokenizer built here), and the UTF-8 guard's view of token
// bytes, checked against TextDecoder on random byte sequences.
import { describe, expect, it } from 'vitest';
import { BYTE_TO_CHAR } from '../../../src/engine/model/text/byte-level';
import { ModelTokenizer } from '../../../src/engine/model/text/tokenizer';
import { xgrammarVocab } from '../../../src/service/structured/tokenizer-info';
import { tokenBytes, Utf8Guard } from '../../../src/service/structured/utf8-guard';
import { rng, structuredModel } from './decode-helpers';

/** A small Llama-2-style tokenizer: Metaspace, byte fallback, <0xNN> tokens. */
function sentencePieceTokenizer(): ModelTokenizer {
  const vocab: Record<string, number> = { '<unk>': 0, '<s>': 1, '</s>': 2 };
  for (let b = 0; b < 256; b++) vocab[`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`] = 3 + b;
  for (const piece of ['▁', 'a', 'b', '▁a', '▁b', 'ab', '▁ab']) vocab[piece] = Object.keys(vocab).length;
  return ModelTokenizer.fromJson(
    {
      version: '1.0',
      added_tokens: [
        { id: 0, content: '<unk>', special: true, single_word: false, lstrip: false, rstrip: false, normalized: false },
        { id: 1, content: '<s>', special: true, single_word: false, lstrip: false, rstrip: false, normalized: false },
        { id: 2, content: '</s>', special: true, single_word: false, lstrip: false, rstrip: false, normalized: false },
      ],
      normalizer: null,
      pre_tokenizer: { type: 'Metaspace', replacement: '▁', prepend_scheme: 'always', split: false },
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
        vocab,
        merges: ['▁ a', '▁ b', 'a b', '▁a b'],
      },
    },
    { bos_token: '<s>', eos_token: '</s>', unk_token: '<unk>' },
  );
}

describe('xgrammarVocab', () => {
  it('a byte-level BPE model: its vocabulary strings, byte_level, no prepended space, its stop ids', async () => {
    const model = await structuredModel('tiny-qwen2');
    const v = xgrammarVocab(model.tokenizer, { vocabSize: 4096, stopTokenIds: [2, 0, 2, 9999] });
    expect(v.vocabType).toBe('byte_level');
    expect(v.prependSpace).toBe(false);
    expect(v.encodedVocab).toHaveLength(model.tokenizer.vocabSize);
    for (const id of [0, 2, 3, 6, 9, 300, 4095]) expect(v.encodedVocab[id]).toBe(model.tokenizer.idToToken(id));
    expect(v.encodedVocab[2]).toBe('<|im_end|>');
    // Deduplicated, and ids outside the logits dropped.
    expect(v.stopTokenIds).toEqual([2, 0]);
    expect(v.vocabSize).toBe(4096);
  });

  it('a padded vocabulary keeps the logits width; a narrower one is an error', async () => {
    const model = await structuredModel('tiny-chat');
    expect(xgrammarVocab(model.tokenizer, { vocabSize: 4160, stopTokenIds: [2] }).vocabSize).toBe(4160);
    expect(() => xgrammarVocab(model.tokenizer, { vocabSize: 4000, stopTokenIds: [2] })).toThrow(/smaller than the tokenizer/);
  });

  it('a SentencePiece-style model: byte_fallback, with a prepended space', () => {
    const tokenizer = sentencePieceTokenizer();
    expect(tokenizer.encode('ab', { addSpecialTokens: false }).map((id) => tokenizer.idToToken(id))).toEqual(['▁ab']);
    const v = xgrammarVocab(tokenizer, { vocabSize: tokenizer.vocabSize, stopTokenIds: [2] });
    expect(v.vocabType).toBe('byte_fallback');
    expect(v.prependSpace).toBe(true);
    expect(v.encodedVocab[3 + 0x41]).toBe('<0x41>');
  });
});

describe('token bytes and the UTF-8 guard', () => {
  it('reads bytes per vocabulary type', async () => {
    const model = await structuredModel('tiny-qwen3');
    const spaceThe = model.tokenizer.encode(' the', { addSpecialTokens: false });
    expect(spaceThe).toHaveLength(1);
    expect([...tokenBytes(model.tokenizer, spaceThe[0], 'byte_level')]).toEqual([...new TextEncoder().encode(' the')]);
    expect([...tokenBytes(model.tokenizer, model.tokenizer.tokenToId(BYTE_TO_CHAR[0xe9])!, 'byte_level')]).toEqual([0xe9]);
    expect([...tokenBytes(model.tokenizer, 3, 'byte_level')]).toEqual([...new TextEncoder().encode('<tool_call>')]);
    const sp = sentencePieceTokenizer();
    expect([...tokenBytes(sp, 3 + 0xe9, 'byte_fallback')]).toEqual([0xe9]);
    expect([...tokenBytes(sp, sp.tokenToId('▁ab')!, 'byte_fallback')]).toEqual([0x20, 0x61, 0x62]);
  });

  it('accepts a byte sequence exactly when it is whole valid UTF-8 (TextDecoder, fatal)', async () => {
    const model = await structuredModel('tiny-qwen3');
    const guard = Utf8Guard.of(model.tokenizer, model.vocabSize, 'byte_level', model.eosTokenIds);
    const decoder = new TextDecoder('utf-8', { fatal: true });
    const random = rng(11);
    // Bytes drawn mostly from lead and continuation ranges, where the rules are.
    const pick = () => {
      const r = random();
      if (r < 0.2) return Math.floor(random() * 0x80);
      if (r < 0.55) return 0x80 + Math.floor(random() * 0x40);
      return 0xc0 + Math.floor(random() * 0x40);
    };
    let valid = 0;
    for (let n = 0; n < 4000; n++) {
      const bytes = Array.from({ length: 1 + Math.floor(random() * 5) }, pick);
      let state = Utf8Guard.START;
      for (const b of bytes) if (state >= 0) state = guard.advance(state, model.tokenizer.tokenToId(BYTE_TO_CHAR[b])!);
      let ok = true;
      try {
        decoder.decode(Uint8Array.from(bytes));
      } catch {
        ok = false;
      }
      expect(state === Utf8Guard.START, bytes.map((b) => b.toString(16)).join(' ')).toBe(ok);
      if (ok) valid++;
    }
    expect(valid).toBeGreaterThan(200);
  });

  it('the mask of a state allows exactly the tokens that keep the bytes valid, and stop ids', async () => {
    const model = await structuredModel('tiny-qwen3');
    const guard = Utf8Guard.of(model.tokenizer, model.vocabSize, 'byte_level', model.eosTokenIds);
    const afterE0 = guard.advance(Utf8Guard.START, model.tokenizer.tokenToId(BYTE_TO_CHAR[0xe0])!);
    const mask = guard.mask(afterE0);
    const allowed = (id: number) => ((mask[id >>> 5] >>> (id & 31)) & 1) === 1;
    for (let id = 0; id < model.vocabSize; id++) {
      const bytes = [0xe0, ...tokenBytes(model.tokenizer, id, 'byte_level')];
      // Valid so far: decodes once some continuation bytes are added (the first one within the
      // range its lead byte asks for).
      const ok = [0, 1, 2, 3].some((k) =>
        [0x80, 0x90, 0xa0].some((first) => {
          try {
            new TextDecoder('utf-8', { fatal: true }).decode(
              Uint8Array.from([...bytes, ...(k ? [first, ...Array(k - 1).fill(0x80)] : [])]),
            );
            return true;
          } catch {
            return false;
          }
        }),
      );
      expect(allowed(id), `id ${id}`).toBe(ok || model.eosTokenIds.includes(id));
    }
  });
});
