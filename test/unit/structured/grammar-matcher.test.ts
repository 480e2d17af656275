// GrammarConstraint as the engine drives it: the grammar starting after </think>, jump-forward
// tokens and rollback, UTF-8 kept valid inside multi-byte characters, refused tokens leaving the matcher where
// it was, and the lifecycle errors the engine would hit on misuse.
import { beforeAll, describe, expect, it } from 'vitest';
import { BYTE_TO_CHAR } from '../../../src/engine/model/text/byte-level';
import { structuredOutputSpec, type StructuredRequestFields } from '../../../src/service/structured/constraint-spec';
import { compileStructuredOutput, type CompiledConstraint, type StructuredModel } from '../../../src/service/structured/grammar-compiler';
import { choiceConstraints, prepareStructuredOutput } from '../../../src/service/structured/structured-output';
import { bitmaskWords, feedText, nextAllowed, structuredModel } from './decode-helpers';

let model: StructuredModel;
beforeAll(async () => {
  model = await structuredModel('tiny-qwen3');
});

const compiled = (fields: StructuredRequestFields): Promise<CompiledConstraint> =>
  compileStructuredOutput(structuredOutputSpec(fields)!, model);
const byteToken = (byte: number) => model.tokenizer.tokenToId(BYTE_TO_CHAR[byte])!;
const text = (ids: number[]) => model.tokenizer.decode(ids);

describe('the grammar can start after the reasoning', () => {
  it('every token is free until </think>, then the grammar holds', async () => {
    const c = await compiled({ structured_outputs: { choice: ['yes', 'no'] } });
    const endThink = model.tokenizer.tokenToId('</think>')!;
    const matcher = c.createConstraint({ startAfterTokenId: endThink });
    expect(matcher.started).toBe(false);
    expect(matcher.fillNextTokenBitmask(bitmaskWords(model.vocabSize))).toBe(false);
    expect(feedText(matcher, model, 'Let me think: maybe, or not.')).toBe(-1);
    expect(matcher.acceptToken(endThink)).toBe(true);
    expect(matcher.started).toBe(true);
    const allowed = nextAllowed(matcher, model.vocabSize).map((id) => text([id]));
    expect(allowed.length).toBeGreaterThan(0);
    for (const t of allowed)
      expect(
        ['yes', 'no'].some((choice) => choice.startsWith(t)),
        t,
      ).toBe(true);
    expect(feedText(matcher, model, 'maybe')).toBe(0);
    expect(feedText(matcher, model, 'no')).toBe(-1);
    expect(matcher.acceptToken(model.eosTokenIds[0])).toBe(true);
    expect(matcher.isTerminated()).toBe(true);
    matcher.dispose();
  });
});

describe('choiceConstraints', () => {
  it('one independent matcher per choice, started after </think> when the output reasons', async () => {
    const so = await prepareStructuredOutput({ structured_outputs: { choice: ['yes', 'no'] } }, model);
    const [a, b] = choiceConstraints(so, 2, { tokenizer: model.tokenizer, reasoning: true });
    expect(a!.fillNextTokenBitmask(bitmaskWords(model.vocabSize))).toBe(false);
    expect(feedText(a!, model, 'hmm</think>yes')).toBe(-1);
    expect(feedText(b!, model, '</think>no')).toBe(-1);
    expect(nextAllowed(a!, model.vocabSize).sort((x, y) => x - y)).toEqual([...model.eosTokenIds].sort((x, y) => x - y));
    const [c] = choiceConstraints(so, 1, { tokenizer: model.tokenizer, reasoning: false });
    expect(feedText(c!, model, 'hmm')).toBe(0);
    expect(choiceConstraints(await prepareStructuredOutput({}, model), 3, { tokenizer: model.tokenizer, reasoning: true })).toEqual([
      null,
      null,
      null,
    ]);
    for (const m of [a, b, c]) m!.dispose();
  });
});

describe('jump-forward decoding', () => {
  const schema = { type: 'object', properties: { name: { type: 'string' }, count: { type: 'integer' } }, required: ['name', 'count'] };

  it('offers the tokens of the text the grammar forces, without moving the matcher', async () => {
    const c = await compiled({ structured_outputs: { json: schema, disable_any_whitespace: true } });
    const matcher = c.createConstraint({ tokenizer: model.tokenizer });
    expect(feedText(matcher, model, '{')).toBe(-1);
    const before = nextAllowed(matcher, model.vocabSize);
    const forced = matcher.forcedTokens();
    expect(forced.length).toBeGreaterThan(0);
    expect('"name": "'.startsWith(text(forced)), text(forced)).toBe(true);
    expect(nextAllowed(matcher, model.vocabSize)).toEqual(before);
    for (const id of forced) expect(matcher.acceptToken(id)).toBe(true);
    expect(feedText(matcher, model, '"name": "'.slice(text(forced).length) + 'Ada", ')).toBe(-1);
    // After the name: the second key is forced too.
    expect('"count": '.startsWith(text(matcher.forcedTokens()))).toBe(true);
    expect(feedText(matcher, model, '"count": 3}')).toBe(-1);
    expect(matcher.forcedTokens()).toEqual([]);
    matcher.dispose();
  });

  it('rollback puts the matcher back where it was: masks, termination, UTF-8 state and the start token', async () => {
    const c = await compiled({ structured_outputs: { json: schema } });
    const matcher = c.createConstraint({ tokenizer: model.tokenizer });
    expect(feedText(matcher, model, '{"name": "')).toBe(-1);
    const before = nextAllowed(matcher, model.vocabSize);
    const forcedBefore = matcher.forcedTokens();
    // A two-byte character, the rest of the document and EOS: the grammar terminates.
    const ids = [
      byteToken(0xc3),
      byteToken(0xa9),
      ...model.tokenizer.encode('", "count": 3}', { addSpecialTokens: false }),
      model.eosTokenIds[0],
    ];
    for (const id of ids) expect(matcher.acceptToken(id)).toBe(true);
    expect(matcher.isTerminated()).toBe(true);
    matcher.rollback(ids.length);
    expect(matcher.isTerminated()).toBe(false);
    expect(nextAllowed(matcher, model.vocabSize)).toEqual(before);
    expect(matcher.forcedTokens()).toEqual(forcedBefore);
    // One byte in: mid-character, so only continuation bytes are allowed; back out of it again.
    expect(matcher.acceptToken(byteToken(0xc3))).toBe(true);
    expect(nextAllowed(matcher, model.vocabSize)).not.toEqual(before);
    matcher.rollback(1);
    expect(nextAllowed(matcher, model.vocabSize)).toEqual(before);
    expect(() => matcher.rollback(100)).toThrow(/cannot roll back/);
    matcher.dispose();

    // Before the grammar starts (reasoning), tokens are free; rolling back the start token stops it again.
    const endThink = model.tokenizer.tokenToId('</think>')!;
    const [late] = choiceConstraints(await prepareStructuredOutput({ structured_outputs: { json: schema } }, model), 1, {
      tokenizer: model.tokenizer,
      reasoning: true,
    });
    expect(late!.acceptToken(endThink)).toBe(true);
    expect(late!.fillNextTokenBitmask(new Int32Array(bitmaskWords(model.vocabSize)))).toBe(true);
    late!.rollback!(1);
    expect(late!.fillNextTokenBitmask(new Int32Array(bitmaskWords(model.vocabSize)))).toBe(false);
    late!.dispose();
  });

  it('nothing is forced where the grammar leaves a choice, or without a tokenizer', async () => {
    const c = await compiled({ structured_outputs: { json: schema, disable_any_whitespace: true } });
    const free = c.createConstraint({ tokenizer: model.tokenizer });
    expect(feedText(free, model, '{"name": "')).toBe(-1);
    expect(free.forcedTokens()).toEqual([]);
    const noTokenizer = c.createConstraint();
    expect(feedText(noTokenizer, model, '{')).toBe(-1);
    expect(noTokenizer.forcedTokens()).toEqual([]);
    free.dispose();
    noTokenizer.dispose();
  });
});

describe('UTF-8 stays valid', () => {
  it('bytes that never occur in UTF-8 are not allowed; a lead byte allows only its continuations', async () => {
    const c = await compiled({ structured_outputs: { json: { type: 'string', maxLength: 4 } } });
    const matcher = c.createConstraint();
    expect(feedText(matcher, model, '"a')).toBe(-1);
    const allowed = new Set(nextAllowed(matcher, model.vocabSize));
    for (const bad of [0xc0, 0xc1, 0xf5, 0xff, 0x80]) expect(allowed.has(byteToken(bad)), bad.toString(16)).toBe(false);
    expect(allowed.has(byteToken(0xc3))).toBe(true);
    expect(matcher.acceptToken(byteToken(0xc1))).toBe(false);
    // After E0 the next byte must be A0..BF (no overlong form), and the string cannot close.
    expect(matcher.acceptToken(byteToken(0xe0))).toBe(true);
    const inside = new Set(nextAllowed(matcher, model.vocabSize));
    expect(inside.has(byteToken(0x80))).toBe(false);
    expect(inside.has(byteToken(0xa0))).toBe(true);
    expect(inside.has(model.tokenizer.tokenToId('"')!)).toBe(false);
    expect(matcher.acceptToken(byteToken(0xa4))).toBe(true);
    expect(matcher.acceptToken(byteToken(0x80))).toBe(true);
    expect(feedText(matcher, model, '"')).toBe(-1);
    expect(
      JSON.parse(
        text([
          ...model.tokenizer.encode('"a', { addSpecialTokens: false }),
          byteToken(0xe0),
          byteToken(0xa4),
          byteToken(0x80),
          model.tokenizer.tokenToId('"')!,
        ]),
      ),
    ).toBe('aऀ');
    matcher.dispose();
  });
});

describe('misuse', () => {
  it('a refused token leaves the matcher where it was', async () => {
    const c = await compiled({ structured_outputs: { regex: '[0-9]+' } });
    const matcher = c.createConstraint();
    const before = nextAllowed(matcher, model.vocabSize);
    expect(matcher.acceptToken(model.tokenizer.tokenToId('a')!)).toBe(false);
    expect(matcher.acceptToken(-1)).toBe(false);
    expect(matcher.acceptToken(model.vocabSize)).toBe(false);
    expect(nextAllowed(matcher, model.vocabSize)).toEqual(before);
    matcher.dispose();
  });

  it('filling after termination, a short bitmask and use after dispose throw with a reason', async () => {
    const c = await compiled({ structured_outputs: { choice: ['ok'] } });
    const matcher = c.createConstraint();
    expect(() => matcher.fillNextTokenBitmask(new Int32Array(3))).toThrow(/bitmask of 3 words, need 128/);
    expect(feedText(matcher, model, 'ok')).toBe(-1);
    expect(matcher.acceptToken(model.eosTokenIds[1])).toBe(true);
    expect(matcher.isTerminated()).toBe(true);
    expect(matcher.acceptToken(model.eosTokenIds[0])).toBe(false);
    expect(() => matcher.fillNextTokenBitmask(bitmaskWords(model.vocabSize))).toThrow(/terminated/);
    matcher.dispose();
    matcher.dispose();
    expect(() => matcher.acceptToken(1)).toThrow(/after dispose/);
  });
});
