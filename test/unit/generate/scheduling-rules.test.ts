// Pure pieces of the scheduler: bad-word bans, finish order, beam bookkeeping, the event stream.
import { describe, expect, it } from 'vitest';
import { BeamSearch } from '../../../src/engine/generate/beam-search';
import { EventStream } from '../../../src/engine/generate/event-stream';
import { bannedByBadWords, ChoiceState, validateRequest } from '../../../src/engine/generate/request-state';
import type { GenerationEvent } from '../../../src/engine/generate/types';

describe('bad words', () => {
  it('bans single-token words always and a longer word’s last token after its prefix', () => {
    const words = [[5], [1, 2], [3, 4, 6], [9, 9]];
    expect(bannedByBadWords(words, [])).toEqual([5]);
    expect(bannedByBadWords(words, [7, 1])).toEqual([5, 2]);
    expect(bannedByBadWords(words, [3, 4])).toEqual([5, 6]);
    expect(bannedByBadWords(words, [4, 3])).toEqual([5]);
    expect(bannedByBadWords(words, [9])).toEqual([5, 9]);
  });
});

describe('finish order (EOS or stop id, then length)', () => {
  it('stops on EOS without an id, on a stop id with it, then by max_tokens or the context', () => {
    const c = new ChoiceState(0, { eosTokenIds: [2], stopTokenIds: [7] }, null);
    c.output.push(2);
    expect(c.finishAfter(2, 1, 10, 100)).toEqual({ reason: 'stop', stopTokenId: null }); // EOS at max_tokens: stop
    expect(c.finishAfter(7, 1, 10, 100)).toEqual({ reason: 'stop', stopTokenId: 7 });
    expect(c.finishAfter(5, 1, 10, 100)).toEqual({ reason: 'length', stopTokenId: null });
    expect(c.finishAfter(5, 5, 100, 100)).toEqual({ reason: 'length', stopTokenId: null });
    expect(c.finishAfter(5, 5, 10, 100)).toBeNull();
    const ignoring = new ChoiceState(0, { eosTokenIds: [2], ignoreEos: true }, null);
    ignoring.output.push(2);
    expect(ignoring.finishAfter(2, 5, 10, 100)).toBeNull();
  });
});

describe('beam bookkeeping', () => {
  it('keeps the best n extensions, completes EOS candidates, ranks by length-penalised score', () => {
    const bs = new BeamSearch(2, 1, 3, new Set([0]), 1);
    // Step 1: one beam proposes 4 candidates; EOS (0) completes a beam.
    let ext = bs.step([
      [
        { id: 5, logprob: -0.1 },
        { id: 0, logprob: -0.5 },
        { id: 6, logprob: -1 },
        { id: 7, logprob: -2 },
      ],
    ]);
    expect(ext.map((e) => [e.parent, e.beam.tokens.map((t) => t.id)])).toEqual([
      [0, [5]],
      [0, [6]],
    ]);
    expect(bs.completed.map((b) => b.tokens.map((t) => t.id))).toEqual([[0]]);
    ext = bs.step([
      [
        { id: 8, logprob: -3 },
        { id: 9, logprob: -4 },
      ],
      [
        { id: 1, logprob: -0.2 },
        { id: 2, logprob: -5 },
      ],
    ]);
    expect(ext.map((e) => [e.parent, e.beam.tokens.map((t) => t.id)])).toEqual([
      [1, [6, 1]],
      [0, [5, 8]],
    ]);
    // Scores: [0] -0.5/3 (EOS not counted), [6,1] -1.2/5, [5,8] -3.1/5.
    expect(bs.best().map((b) => b.tokens.map((t) => t.id))).toEqual([[0], [6, 1]]);
    expect(ext[0].beam.tokens[1].topLogprobs).toEqual([{ id: 1, logprob: -0.2 }]);
  });
});

describe('EventStream', () => {
  it('delivers queued events, then ends; return() cancels once; fail() throws after the queue', async () => {
    let cancels = 0;
    const stopped: number[] = [];
    const s = new EventStream({ onCancel: () => cancels++, onStopChoice: (i) => stopped.push(i) });
    const ev: GenerationEvent = { type: 'tokens', choice: 0, tokens: [] };
    s.push(ev);
    s.stopChoice(1);
    const it = s[Symbol.asyncIterator]();
    expect(await it.next()).toEqual({ value: ev, done: false });
    const pending = it.next();
    s.push(ev);
    expect(await pending).toEqual({ value: ev, done: false });
    await it.return!();
    expect(cancels).toBe(1);
    expect(stopped).toEqual([1]);
    expect((await it.next()).done).toBe(true);

    const f = new EventStream({ onCancel: () => cancels++, onStopChoice: () => {} });
    f.push(ev);
    f.fail(new Error('boom'));
    const g = f[Symbol.asyncIterator]();
    expect((await g.next()).done).toBe(false);
    await expect(g.next()).rejects.toThrow('boom');
    expect(cancels).toBe(1);
  });
});

describe('requests that can never run', () => {
  const limits = { maxModelLen: 64, vocabSize: 100, maxSeqs: 4, numBlocks: 3 };
  const req = (over: object = {}) => ({
    model: 'm',
    adapter: null,
    promptTokenIds: [1, 2, 3],
    n: 1,
    sampling: [{}],
    maxTokens: 8,
    promptLogprobs: null,
    badWords: [],
    ...over,
  });
  it('fail at once with the reason', () => {
    expect(() => validateRequest(req(), limits)).not.toThrow();
    expect(() => validateRequest(req({ promptTokenIds: [] }), limits)).toThrow(/empty/);
    expect(() => validateRequest(req({ promptTokenIds: [100] }), limits)).toThrow(/outside \[0, 100\)/);
    expect(() => validateRequest(req({ promptTokenIds: Array(64).fill(1) }), limits)).toThrow(/maximum context length is 64/);
    expect(() => validateRequest(req({ n: 5, sampling: Array(5).fill({}) }), limits)).toThrow(/exceeds the 4 sequences/);
    expect(() => validateRequest(req({ promptTokenIds: Array(40).fill(1), maxTokens: 20 }), limits)).toThrow(
      /needs 64 tokens of KV cache; the cache holds 48/,
    );
    expect(() =>
      validateRequest(req({ n: 11, sampling: Array(11).fill({}), beamSearch: { lengthPenalty: 1 } }), { ...limits, maxSeqs: 16 }),
    ).toThrow(/width <= 10/);
  });
});
