/**
 * What xgrammar needs to know about a model's vocabulary (its TokenizerInfo), read from the
 * ModelTokenizer the way xgrammar's own `TokenizerInfo.from_huggingface` reads a Hugging Face
 * tokenizer:
 * - the encoded vocabulary: every id's vocabulary string as tokenizer.json spells it ("Ġthe" for
 *   byte-level BPE, "▁the" / "<0x0A>" for SentencePiece-style models), added tokens by content;
 * - the vocab type that says how to decode those strings: `byte_level` for a ByteLevel decoder,
 *   `byte_fallback` when the vocabulary carries <0xNN> byte tokens, `raw` otherwise;
 * - whether tokenisation prepends a space (SentencePiece's "▁" in front of the first word);
 * - the size of the logits (config.json vocab_size, which may exceed the tokenizer's ids: the
 *   padding rows are never allowed by a grammar);
 * - the stop ids that end a grammar (the model's EOS ids).
 *
 * Not here: creating the WASM object (grammar-compiler.ts does, under the runtime's lock).
 * Reference: xgrammar python/xgrammar/tokenizer_info.py (from_huggingface, _is_tiktoken...).
 */
import type { ModelTokenizer } from '../../engine/model/text/tokenizer';

export type VocabType = 'byte_level' | 'byte_fallback' | 'raw';

export interface XGrammarVocab {
  /** One string per tokenizer id; "" for ids the tokenizer does not define. */
  encodedVocab: string[];
  vocabType: VocabType;
  prependSpace: boolean;
  /** Width of the logits row (and of the bitmask, in bits). */
  vocabSize: number;
  stopTokenIds: number[];
}

export interface VocabOptions {
  /** config.json vocab_size. */
  vocabSize: number;
  /** Ids that end the output once the grammar is complete (ServedModel.eosTokenIds). */
  stopTokenIds: readonly number[];
}

/** SentencePiece byte-fallback tokens are spelled <0x00> ... <0xFF>. */
const BYTE_FALLBACK_TOKEN = /^<0x[0-9A-F]{2}>$/;

export function xgrammarVocab(tokenizer: ModelTokenizer, options: VocabOptions): XGrammarVocab {
  if (options.vocabSize < tokenizer.vocabSize) {
    throw new Error(`config vocab_size ${options.vocabSize} is smaller than the tokenizer's ${tokenizer.vocabSize} ids`);
  }
  const encodedVocab: string[] = [];
  let byteTokens = 0;
  for (let id = 0; id < tokenizer.vocabSize; id++) {
    const token = tokenizer.idToToken(id) ?? '';
    encodedVocab.push(token);
    if (BYTE_FALLBACK_TOKEN.test(token)) byteTokens++;
  }
  const vocabType: VocabType = tokenizer.byteLevel ? 'byte_level' : byteTokens >= 256 ? 'byte_fallback' : 'raw';
  const stopTokenIds = [...new Set(options.stopTokenIds)].filter((id) => id >= 0 && id < options.vocabSize);
  return {
    encodedVocab,
    vocabType,
    prependSpace: !tokenizer.byteLevel && prependsSpace(tokenizer),
    vocabSize: options.vocabSize,
    stopTokenIds,
  };
}

/** A SentencePiece-style tokenizer writes "a" as "▁a": the text gained a leading space. */
function prependsSpace(tokenizer: ModelTokenizer): boolean {
  const ids = tokenizer.encode('a', { addSpecialTokens: false });
  const first = ids.length > 0 ? tokenizer.idToToken(ids[0]) : undefined;
  return first !== undefined && first.startsWith('\u2581');
}
