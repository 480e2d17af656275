// From a checked request to the engine's GenerationRequest, and from engine events to the
// response and to the stream, with tiny-chat's real tokenizer: seeds, stop ids, bad words,
// logprobs in every mode, echo, token ids, usage (also continuous), finish and stop reasons,
// stop strings stopping the choice in the engine, and streamed chunks that add up to exactly the
// non-streamed response.
import { beforeAll, describe, expect, it } from 'vitest';
import type { GenerationEvent, ServedModel } from '../../../src/engine/generate/types';
import { maxTokensFor } from '../../../src/service/chat/max-tokens';
import { passThroughParser } from '../../../src/service/chat/output-parser';
import { planChat, type PlannedRun } from '../../../src/service/chat/plan';
import { buildPrompt } from '../../../src/service/chat/prompt';
import type { ChatRequest } from '../../../src/service/chat/request';
import type { ChatCompletionChunk, StreamErrorEvent } from '../../../src/service/chat/response-types';
import { collectResponse, streamResponse } from '../../../src/service/chat/run';
import { eventsFor, handleOf, sampled, servedModel } from './fixtures';

let m: ServedModel;
beforeAll(async () => {
  m = await servedModel('tiny-chat');
});

const NOW = Date.UTC(2025, 0, 2, 3, 4, 5);

function plan(extra: Partial<ChatRequest>): PlannedRun {
  const req: ChatRequest = { messages: [{ role: 'user', content: 'Tell me' }], ...extra };
  const prompt = buildPrompt(req, m);
  return planChat({
    req,
    served: m,
    servedName: 'hearth/tiny-chat',
    prompt,
    maxTokens: maxTokensFor(req, prompt.tokenIds.length, m),
    adapter: null,
    parser: passThroughParser,
    requestId: 'req-1',
    now: NOW,
  });
}

const ids = (text: string) => m.tokenizer.encode(text, { addSpecialTokens: false });
const eos = () => m.tokenizer.eosTokenId!;

async function both(extra: Partial<ChatRequest>, events: () => GenerationEvent[]) {
  const response = await collectResponse(plan(extra), handleOf(events()));
  const chunks: (ChatCompletionChunk | StreamErrorEvent)[] = [];
  for await (const c of streamResponse(plan({ ...extra, stream: true }), handleOf(events()))) chunks.push(c);
  return { response, chunks: chunks as ChatCompletionChunk[] };
}

/** What a client rebuilds from the chunks, choice by choice. */
function rebuild(chunks: ChatCompletionChunk[], n: number) {
  return Array.from({ length: n }, (_, i) => {
    const mine = chunks.filter((c) => c.choices[0]?.index === i);
    return {
      content: mine.map((c) => c.choices[0].delta.content ?? '').join(''),
      logprobs: mine.flatMap((c) => c.choices[0].logprobs?.content ?? []),
      tokenIds: mine.flatMap((c) => c.choices[0].token_ids ?? []),
      finish: mine.filter((c) => c.choices[0].finish_reason !== null).map((c) => [c.choices[0].finish_reason, c.choices[0].stop_reason]),
    };
  });
}

describe('planChat: the GenerationRequest', () => {
  it('gives choice i the seed + i and the request sampling; the model defaults the rest', () => {
    const { generation, plan: p } = plan({
      n: 3,
      seed: 2n ** 63n - 2n,
      temperature: 0.7,
      top_k: 5,
      stop_token_ids: [9, 9, 12],
      logit_bias: { ' 7': 3 },
      min_tokens: 2,
    });
    expect(generation.n).toBe(3);
    expect(generation.sampling.map((s) => s.seed)).toEqual([2n ** 63n - 2n, 2n ** 63n - 1n, 2n ** 63n]);
    expect(generation.sampling[1]).toMatchObject({
      temperature: 0.7,
      topK: 5,
      topP: 1,
      minP: 0,
      repetitionPenalty: 1,
      stopTokenIds: [9, 12],
      minTokens: 2,
      eosTokenIds: m.eosTokenIds,
      ignoreEos: false,
      topLogprobs: 0,
    });
    expect([...(generation.sampling[0].logitBias as Map<number, number>)]).toEqual([[7, 3]]);
    expect(generation.constraints).toEqual([null, null, null]);
    expect(p.id).toBe('chatcmpl-req-1');
    expect(p.created).toBe(Math.floor(NOW / 1000));
  });

  it('bounds generation by the context, maps bad words to token sequences, asks prompt logprobs for echo', () => {
    const { generation } = plan({ bad_words: ['world'], echo: true, logprobs: true, top_logprobs: 2, cache_salt: 's', max_tokens: 5 });
    expect(generation.maxTokens).toBe(5);
    expect(generation.badWords).toEqual(m.tokenizer.badWordsIds(['world']));
    expect(generation.badWords).toContainEqual(ids('world'));
    expect(generation.promptLogprobs).toBe(2);
    expect(generation.cacheSalt).toBe('s');
    expect(generation.sampling[0].topLogprobs).toBe(2);
    expect(plan({}).generation.maxTokens).toBe(m.maxModelLen - plan({}).generation.promptTokenIds.length);
    expect(plan({}).generation.promptLogprobs).toBeNull();
    expect(plan({ use_beam_search: true, n: 2, length_penalty: 0.5 }).generation.beamSearch).toEqual({ lengthPenalty: 0.5 });
    expect(plan({ seed: undefined }).generation.sampling[0].seed).toBeUndefined();
  });
});

describe('responses and streams from engine events', () => {
  it('builds the non-streaming response with every vLLM field', async () => {
    const tokens = sampled([...ids('Hello there'), eos()]);
    const { response } = await both({}, () => eventsFor([{ tokens, finish: { reason: 'stop' } }], { cachedTokens: 4 }));
    const promptTokens = plan({}).plan.prompt.tokenIds.length;
    expect(response).toMatchObject({
      id: 'chatcmpl-req-1',
      object: 'chat.completion',
      created: Math.floor(NOW / 1000),
      model: 'hearth/tiny-chat',
      service_tier: null,
      system_fingerprint: null,
      usage: {
        prompt_tokens: promptTokens,
        completion_tokens: tokens.length,
        total_tokens: promptTokens + tokens.length,
        prompt_tokens_details: { cached_tokens: 4 },
      },
      prompt_logprobs: null,
      prompt_token_ids: null,
      kv_transfer_params: null,
    });
    expect(response.choices[0]).toMatchObject({
      index: 0,
      message: {
        role: 'assistant',
        content: 'Hello there',
        refusal: null,
        annotations: null,
        audio: null,
        function_call: null,
        tool_calls: [],
        reasoning_content: null,
        reasoning: null,
      },
      finish_reason: 'stop',
      stop_reason: null,
      token_ids: null,
    });
  });

  it('shows training logprobs when logprobs is omitted, vLLM logprobs when true, none when false', async () => {
    const tokens = sampled([...ids('Hi'), eos()], 3);
    const run = async (extra: Partial<ChatRequest>) =>
      (await both(extra, () => eventsFor([{ tokens, finish: { reason: 'stop' } }]))).response.choices[0].logprobs;
    const training = (await run({}))!.content;
    expect(training.map((e) => e.token)).toEqual(tokens.map((t) => `token_id:${t.id}`));
    expect(training.every((e) => e.top_logprobs.length === 0)).toBe(true);
    expect(training.at(-1)!.bytes).toEqual([...new TextEncoder().encode('<|im_end|>')]);
    expect(training.map((e) => e.logprob)).toEqual(tokens.map((t) => t.logprob));
    expect((await run({ return_tokens_as_token_ids: false }))!.content[0].token).toBe('Hi');

    const full = (await run({ logprobs: true, top_logprobs: 2 }))!.content;
    expect(full[0]).toEqual({
      token: 'Hi',
      logprob: tokens[0].logprob,
      bytes: [...new TextEncoder().encode('Hi')],
      top_logprobs: tokens[0].topLogprobs.slice(0, 2).map((a) => ({
        token: m.tokenizer.tokenText(a.id),
        logprob: a.logprob,
        bytes: [...new TextEncoder().encode(m.tokenizer.tokenText(a.id))],
      })),
    });
    const asIds = (await run({ logprobs: true, top_logprobs: 1, return_tokens_as_token_ids: true }))!.content[0];
    expect(asIds.token).toBe(`token_id:${tokens[0].id}`);
    expect(asIds.bytes).toEqual([...new TextEncoder().encode('Hi')]);
    expect(asIds.top_logprobs[0].bytes).toEqual([...new TextEncoder().encode(`token_id:${tokens[0].topLogprobs[0].id}`)]);
    expect((await run({ logprobs: true }))!.content[0].top_logprobs).toEqual([]);
    expect(await run({ logprobs: false })).toBeNull();
  });

  it('floors logprobs at -9999 and formats prompt logprobs', async () => {
    const tokens = [{ id: ids('x')[0], logprob: -1e30, topLogprobs: [] }];
    const promptIds = plan({}).plan.prompt.tokenIds;
    const promptLogprobs = [
      null,
      {
        tokenId: promptIds[1],
        logprob: -2,
        rank: 3,
        top: [
          { id: 5, logprob: -0.5 },
          { id: promptIds[1], logprob: -2 },
        ],
      },
    ];
    const { response } = await both({ echo: false, prompt_logprobs: 2 }, () =>
      eventsFor([{ tokens, finish: { reason: 'length' } }], { promptLogprobs }),
    );
    expect(response.choices[0].logprobs!.content[0].logprob).toBe(-9999);
    expect(response.prompt_logprobs).toEqual([
      null,
      {
        [promptIds[1]]: { logprob: -2, rank: 3, decoded_token: m.tokenizer.tokenText(promptIds[1]) },
        5: { logprob: -0.5, rank: 1, decoded_token: m.tokenizer.tokenText(5) },
      },
    ]);
  });

  it('streams chunks as vLLM: role, content per step, finish with the last delta, usage, and equals the response', async () => {
    const a = sampled([...ids('First answer'), eos()], 2, 3);
    const b = sampled(ids('Second one is longer'), 2, 4);
    const extra: Partial<ChatRequest> = {
      n: 2,
      temperature: 1,
      logprobs: true,
      top_logprobs: 2,
      return_token_ids: true,
      stream_options: { include_usage: true },
      max_tokens: b.length,
    };
    const { response, chunks } = await both(extra, () =>
      eventsFor([
        { tokens: a, finish: { reason: 'stop' } },
        { tokens: b, finish: { reason: 'length' } },
      ]),
    );
    const promptIds = plan({}).plan.prompt.tokenIds;
    expect(chunks.every((c) => c.id === 'chatcmpl-req-1' && c.object === 'chat.completion.chunk' && c.model === 'hearth/tiny-chat')).toBe(
      true,
    );
    expect(chunks[0]).toEqual({
      id: 'chatcmpl-req-1',
      object: 'chat.completion.chunk',
      created: Math.floor(NOW / 1000),
      model: 'hearth/tiny-chat',
      choices: [{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }],
      prompt_token_ids: promptIds,
    });
    expect(chunks[1].choices[0]).toEqual({ index: 1, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null });
    expect(chunks[1].prompt_token_ids).toBeUndefined();
    const body = chunks.slice(2, -1);
    expect(body.every((c) => c.choices.length === 1 && c.usage === undefined)).toBe(true);
    const usage = chunks.at(-1)!;
    expect(usage.choices).toEqual([]);
    expect(usage.usage).toEqual(response.usage);

    const rebuilt = rebuild(chunks, 2);
    for (const i of [0, 1]) {
      expect(rebuilt[i].content).toBe(response.choices[i].message.content);
      expect(rebuilt[i].logprobs).toEqual(response.choices[i].logprobs!.content);
      expect(rebuilt[i].tokenIds).toEqual(response.choices[i].token_ids);
      expect(rebuilt[i].finish).toEqual([[response.choices[i].finish_reason, response.choices[i].stop_reason]]);
    }
    expect(response.choices.map((c) => c.finish_reason)).toEqual(['stop', 'length']);
    // The finish chunk carries the last token (vLLM's test_chat_streaming asserts its delta has content).
    const lastOfB = body.filter((c) => c.choices[0].index === 1).at(-1)!;
    expect(lastOfB.choices[0].finish_reason).toBe('length');
    expect(lastOfB.choices[0].delta.content).toBe(m.tokenizer.tokenText(b.at(-1)!.id));
    expect(lastOfB.choices[0].token_ids).toEqual([b.at(-1)!.id]);
  });

  it('sends per-chunk usage with continuous_usage_stats and no usage without include_usage', async () => {
    const tokens = sampled(ids('one two three'));
    const events = () => eventsFor([{ tokens, finish: { reason: 'length' } }]);
    const { chunks } = await both(
      { stream_options: { include_usage: true, continuous_usage_stats: true }, max_tokens: tokens.length },
      events,
    );
    const P = plan({}).plan.prompt.tokenIds.length;
    const counts = chunks.slice(0, -1).map((c) => c.usage!.completion_tokens);
    expect(counts).toEqual([0, ...tokens.map((_, i) => i + 1)]);
    expect(chunks.slice(0, -1).every((c) => c.usage!.prompt_tokens === P)).toBe(true);
    expect(chunks.at(-1)!.usage!.completion_tokens).toBe(tokens.length);
    const plain = await both({ max_tokens: tokens.length }, events);
    expect(plain.chunks.every((c) => c.usage === undefined)).toBe(true);
    expect(plain.chunks.at(-1)!.choices[0].finish_reason).toBe('length');
  });

  it('echoes the continued message in the response and as its own chunk', async () => {
    const extra: Partial<ChatRequest> = {
      messages: [
        { role: 'user', content: 'Go' },
        { role: 'assistant', content: 'Once upon' },
      ],
      continue_final_message: true,
      echo: true,
    };
    const tokens = sampled(ids(' a time'));
    const { response, chunks } = await both(extra, () => eventsFor([{ tokens, finish: { reason: 'length' } }]));
    expect(response.choices[0].message.content).toBe('Once upon a time');
    expect(chunks[1].choices[0].delta).toEqual({ content: 'Once upon' });
    expect(rebuild(chunks, 1)[0].content).toBe('Once upon a time');
  });

  it('stops a choice in the engine at a stop string and leaves the event stream once all choices are done', async () => {
    const events = eventsFor([{ tokens: sampled(ids('Alpha. Beta. Gamma.')) }, { tokens: sampled([...ids('Zed'), eos()]) }]);
    const handle = handleOf(events);
    const response = await collectResponse(plan({ n: 2, temperature: 1, stop: ['.'] }), handle);
    expect(handle.stopped).toEqual([0]);
    expect(handle.consumed()).toBeLessThan(events.length);
    expect(response.choices[0]).toMatchObject({ message: { content: 'Alpha' }, finish_reason: 'stop', stop_reason: '.' });
    expect(response.choices[1]).toMatchObject({ message: { content: 'Zed' }, finish_reason: 'stop', stop_reason: null });
    // The tokens up to the matching one count.
    expect(response.choices[0].logprobs!.content).toHaveLength(ids('Alpha.').length);
  });

  it('reports choices the engine ended early as "abort", and engine errors inside the stream', async () => {
    const aborted = await collectResponse(plan({}), handleOf(eventsFor([{ tokens: sampled(ids('partial')) }])));
    expect(aborted.choices[0]).toMatchObject({ message: { content: 'partial' }, finish_reason: 'abort' });

    const failing = handleOf([]);
    failing[Symbol.asyncIterator] = () => ({
      next: () => Promise.reject(new Error('GPU device lost')),
      return: async () => ({ done: true, value: undefined }),
    });
    const chunks: unknown[] = [];
    for await (const c of streamResponse(plan({ stream: true }), failing)) chunks.push(c);
    expect(chunks.at(-1)).toEqual({ error: { message: 'GPU device lost', type: 'InternalServerError', param: null, code: 500 } });
    await expect(collectResponse(plan({}), failing)).rejects.toThrow('GPU device lost');
  });
});
