// Generated tokens -> text for one choice, with the real tiny-chat tokenizer: stop strings with
// vLLM's hold-back, include_stop_str_in_output, min_tokens, stop tokens and stop_reason, max
// tokens, skip_special_tokens, characters split across tokens, and streamed steps that always
// add up to the whole text whatever the tokens.
import { beforeAll, describe, expect, it } from 'vitest';
import type { ServedModel } from '../../../src/engine/generate/types';
import { BYTE_TO_CHAR } from '../../../src/engine/model/text/byte-level';
import { ChoiceOutput, type ChoiceSettings, type ChoiceStep } from '../../../src/service/chat/choice-output';
import { StopStrings } from '../../../src/service/chat/stop-strings';
import { rng, sampled, servedModel } from './fixtures';

describe('StopStrings', () => {
  it('cuts at the first stop string of the list found in the new text, holding back a possible prefix', () => {
    const s = new StopStrings(['STOP', 'END'], false);
    expect(s.append('hello S', true)).toBeNull();
    // "S" could begin "STOP": held back (max length 4 - 1 = 3 characters).
    expect(s.release(false)).toBe('hell');
    expect(s.append('TO', true)).toBeNull();
    expect(s.release(false)).toBe('o ');
    expect(s.append('P and more', true)).toBe('STOP');
    expect(s.text).toBe('hello ');
    expect(s.release(true)).toBe('');
  });

  it('keeps the stop string with include_stop_str_in_output and holds nothing back', () => {
    const s = new StopStrings(['##'], true);
    expect(s.append('a#', true)).toBeNull();
    expect(s.release(false)).toBe('a#');
    expect(s.append('#b', true)).toBe('##');
    expect(s.text).toBe('a##');
    expect(s.release(true)).toBe('#');
  });

  it('prefers list order over position, as vLLM does', () => {
    const s = new StopStrings(['b', 'a'], false);
    expect(s.append('xab', true)).toBe('b');
    expect(s.text).toBe('xa');
  });

  it('does not look without `check` (min_tokens)', () => {
    const s = new StopStrings(['x'], false);
    expect(s.append('axb', false)).toBeNull();
    expect(s.append('c', true)).toBeNull(); // only new text (and what it completes) is searched
    expect(s.text).toBe('axbc');
  });
});

describe('ChoiceOutput', () => {
  let m: ServedModel;
  let settings: ChoiceSettings;
  const ids = (text: string) => m.tokenizer.encode(text, { addSpecialTokens: false });
  const make = (extra: Partial<ChoiceSettings> = {}) => new ChoiceOutput(0, { ...settings, ...extra });
  /** Feeds tokens one by one; returns the steps, the concatenated text and the finish. */
  const feed = (c: ChoiceOutput, tokenIds: number[]) => {
    const steps: ChoiceStep[] = [];
    for (const t of sampled(tokenIds)) {
      const s = c.push([t]);
      if (s) steps.push(s);
    }
    return { steps, text: steps.map((s) => s.text).join(''), finish: c.finish, counted: steps.reduce((n, s) => n + s.tokens.length, 0) };
  };

  beforeAll(async () => {
    m = await servedModel('tiny-chat');
    settings = {
      tokenizer: m.tokenizer,
      promptIds: [],
      skipSpecialTokens: true,
      stop: [],
      includeStopStr: false,
      eosTokenIds: new Set(m.eosTokenIds),
      primaryEos: m.tokenizer.eosTokenId,
      stopTokenIds: new Set(),
      minTokens: 0,
      maxTokens: 100,
    };
  });

  it('ends at EOS with stop_reason null and without the EOS text, which still counts', () => {
    const eos = m.tokenizer.eosTokenId!;
    const out = feed(make(), [...ids('Hello world'), eos]);
    expect(out.text).toBe('Hello world');
    expect(out.finish).toEqual({ reason: 'stop', stopReason: null });
    expect(out.steps.at(-1)!.finish).not.toBeNull();
    expect(out.counted).toBe(ids('Hello world').length + 1);
    // skip_special_tokens false + include_stop_str_in_output shows it.
    expect(feed(make({ skipSpecialTokens: false, includeStopStr: true }), [...ids('Hi'), eos]).text).toBe('Hi<|im_end|>');
    expect(feed(make({ skipSpecialTokens: false }), [...ids('Hi'), eos]).text).toBe('Hi');
  });

  it("reports a stop token id as stop_reason, also generation_config's extra EOS ids (vLLM)", () => {
    const out = feed(make({ stopTokenIds: new Set([ids(' world')[0]]) }), ids('Hello world again'));
    expect(out.text).toBe('Hello');
    expect(out.finish).toEqual({ reason: 'stop', stopReason: ids(' world')[0] });
    expect(feed(make(), [...ids('Hi'), 0]).finish).toEqual({ reason: 'stop', stopReason: 0 });
    // ignore_eos: EOS is an ordinary (special, skipped) token.
    const past = [...ids('Hi'), 2, ...ids(' there')];
    const ignoring = feed(make({ eosTokenIds: new Set(), maxTokens: past.length }), past);
    expect(ignoring.finish).toEqual({ reason: 'length', stopReason: null });
    expect(ignoring.text).toBe('Hi there');
  });

  it('ends at max tokens with "length", on the last token itself', () => {
    const tokens = ids('one two three four five');
    const out = feed(make({ maxTokens: 3 }), tokens);
    expect(out.counted).toBe(3);
    expect(out.text).toBe(m.tokenizer.decode(tokens.slice(0, 3)));
    expect(out.finish).toEqual({ reason: 'length', stopReason: null });
    expect(out.steps).toHaveLength(3);
  });

  it('stops at a stop string (cut before it, or after it when included) and asks the engine to stop', () => {
    const tokens = ids('The answer is 42. Done here.');
    const out = feed(make({ stop: ['. D'] }), tokens);
    expect(out.text).toBe('The answer is 42');
    expect(out.finish).toEqual({ reason: 'stop', stopReason: '. D' });
    expect(out.steps.at(-1)!.stoppedByString).toBe(true);
    expect(out.steps.slice(0, -1).every((s) => !s.stoppedByString)).toBe(true);
    expect(feed(make({ stop: ['. D'], includeStopStr: true }), tokens).text).toBe('The answer is 42. D');
  });

  it('checks stop strings only once the output is longer than min_tokens', () => {
    const tokens = ids('ab ab ab ab');
    const early = feed(make({ stop: ['ab'] }), tokens);
    expect(early.text).toBe('');
    const late = feed(make({ stop: ['ab'], minTokens: 2 }), tokens);
    expect(late.counted).toBe(3);
    expect(late.text).toBe(m.tokenizer.decode(tokens.slice(0, 2)) + ' ');
  });

  it('never emits half a character: byte tokens of one emoji come out as one piece', () => {
    const byteIds = [...new TextEncoder().encode('😀')].map((b) => m.tokenizer.tokenToId(BYTE_TO_CHAR[b])!);
    const out = feed(make(), [...ids('x'), ...byteIds, ...ids('y')]);
    expect(out.steps.map((s) => s.text)).toEqual(['x', '', '', '', '😀', 'y']);
    // Cut off mid-character by the length limit: U+FFFD, as the whole decode would give.
    const cut = feed(make({ maxTokens: 2 }), [...byteIds]);
    expect(cut.text).toBe('\uFFFD');
  });

  it('stops on an engine finish; late tokens are dropped', () => {
    const c = make();
    c.push(sampled(ids('Hi')));
    const end = c.end('abort', null)!;
    expect(end.finish).toEqual({ reason: 'abort', stopReason: null });
    expect(c.push(sampled(ids('more')))).toBeNull();
    expect(c.end('stop', null)).toBeNull();
  });

  it('streams steps that add up to the whole text for random outputs, stops and limits', () => {
    const r = rng(7);
    const words = ['alpha', ' beta', ' gamma', '!', ' STOP', '\n', ' 😀', ' Café', ' 12', '<|im_end|>', '<think>', ' end'];
    for (let trial = 0; trial < 60; trial++) {
      const text = Array.from({ length: 3 + Math.floor(r() * 12) }, () => words[Math.floor(r() * words.length)]).join('');
      const tokens = ids(text);
      const extra: Partial<ChoiceSettings> = {
        stop: r() < 0.5 ? ['STOP', 'a g'] : [],
        includeStopStr: r() < 0.3,
        minTokens: Math.floor(r() * 3),
        maxTokens: 1 + Math.floor(r() * 20),
        skipSpecialTokens: r() < 0.7,
      };
      const c = make(extra);
      const out = feed(c, tokens);
      if (!c.done) out.text += c.end('length', null)!.text;
      expect(out.text, `${JSON.stringify(text)} ${JSON.stringify(extra)}`).toBe(c.text);
      const shown = m.tokenizer.decode(c.tokenIds, { skipSpecialTokens: extra.skipSpecialTokens });
      // The text is the decode of the kept tokens, cut at the stop string (when one matched) and
      // without a final EOS's text.
      if (c.finish?.stopReason === null || c.finish?.reason === 'length')
        expect(shown.startsWith(c.text.replace(/\uFFFD$/, ''))).toBe(true);
    }
  });
});
