/**
 * Hearth's byte-level BPE tokenizer in the real `tokenizer.json` format (tokenizers 0.20+), and
 * its `tokenizer_config.json`. The pipeline follows SmolLM2's: NFC normalization, then a Sequence
 * pre-tokenizer of Digits (each digit its own pre-token, as Llama 3 and Qwen also do: arithmetic
 * stays learnable and numbers never merge into arbitrary chunks) and ByteLevel with the GPT-2
 * regex; a ByteLevel decoder. Added tokens follow Qwen: the three ChatML control tokens are
 * `special` (skipped by skip_special_tokens), the tool and thinking tags are added but not special,
 * so they stay atomic and still show in decoded text, where tool-call and reasoning parsers read them.
 * Not here: the merges (bpe-trainer.ts), chat templates (templates/*.jinja).
 */
import { SequencePreTokenizer } from '@huggingface/tokenizers';
import type { BpeResult } from './bpe-trainer';

export const ADDED_TOKENS: ReadonlyArray<{ content: string; special: boolean }> = [
  { content: '<|endoftext|>', special: true },
  { content: '<|im_start|>', special: true },
  { content: '<|im_end|>', special: true },
  { content: '<tool_call>', special: false },
  { content: '</tool_call>', special: false },
  { content: '<think>', special: false },
  { content: '</think>', special: false },
  { content: '<tool_response>', special: false },
  { content: '</tool_response>', special: false },
];

const PRE_TOKENIZER = {
  type: 'Sequence',
  pretokenizers: [
    { type: 'Digits', individual_digits: true },
    { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
  ],
};

const preTokenizer = new SequencePreTokenizer(PRE_TOKENIZER as never);

/** Splits text exactly as the shipped tokenizer will (NFC, then the pre-tokenizer above). */
export function preTokenize(text: string): string[] {
  return preTokenizer.pre_tokenize(text.normalize('NFC'));
}

export function tokenizerJson(bpe: BpeResult): object {
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: ADDED_TOKENS.map((t, id) => ({
      id,
      content: t.content,
      single_word: false,
      lstrip: false,
      rstrip: false,
      normalized: false,
      special: t.special,
    })),
    normalizer: { type: 'NFC' },
    pre_tokenizer: PRE_TOKENIZER,
    post_processor: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false },
    decoder: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false },
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: false,
      vocab: Object.fromEntries(bpe.vocab.map((t, id) => [t, id])),
      merges: bpe.merges,
    },
  };
}

/**
 * tokenizer_config.json as transformers writes it: the added-token table, the special token
 * strings the chat template sees (bos_token, eos_token, pad_token), and the template itself.
 */
export function tokenizerConfigJson(options: {
  chatTemplate: string;
  bosToken: string | null;
  eosToken: string;
  padToken: string;
  modelMaxLength: number;
}): object {
  return {
    add_bos_token: false,
    add_prefix_space: false,
    added_tokens_decoder: Object.fromEntries(
      ADDED_TOKENS.map((t, id) => [
        String(id),
        { content: t.content, lstrip: false, normalized: false, rstrip: false, single_word: false, special: t.special },
      ]),
    ),
    additional_special_tokens: ['<|im_start|>', '<|im_end|>'],
    bos_token: options.bosToken,
    chat_template: options.chatTemplate,
    clean_up_tokenization_spaces: false,
    eos_token: options.eosToken,
    errors: 'replace',
    model_max_length: options.modelMaxLength,
    pad_token: options.padToken,
    split_special_tokens: false,
    tokenizer_class: 'PreTrainedTokenizerFast',
    unk_token: null,
  };
}
