// Every chat completion request field against the real engine: the bundled tiny-chat model in the
// engine worker (WebGPU, SwiftShader here), reached through the Service Worker by the official
// `openai` SDK in the page. Assertions hold whatever the weights (random or trained): expected
// values are derived from other completions of the same deterministic engine (greedy decoding,
// or seeded sampling), never written down. Requests that do not depend on each other run
// concurrently, so they also share decode steps.
//
// Many completions ban the special tokens (ids 0-2: <|endoftext|>, <|im_start|>, <|im_end|>)
// with logit_bias and ignore EOS, so the trained model (which answers "7<|im_end|>") writes
// several visible tokens to stop on.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, loadOpenAI, startHearth, type Hearth } from './harness';
import { ASK, complete, MODEL, ok, stream } from './chat-helpers';

let h: Hearth;
beforeAll(async () => {
  h = await startHearth();
  await loadOpenAI(h.page);
});
afterAll(async () => {
  await h?.close();
});

const EOS = 2;
const NO_SPECIALS = { '0': -100, '1': -100, '2': -100 };
/** Greedy, visible tokens only, a fixed length. */
const GREEDY = {
  model: MODEL,
  messages: ASK,
  temperature: 0,
  max_tokens: 6,
  ignore_eos: true,
  logit_bias: NO_SPECIALS,
  return_token_ids: true,
};
const run = (body: Record<string, unknown>) => ok(h.page, h.key, body);
const ids = (c: any, i = 0): number[] => c.choices[i].token_ids;
const text = (c: any, i = 0): string => c.choices[i].message.content;

describe('decoding: streaming, seeds, stops, lengths', () => {
  it('streams exactly the non-streaming completion at temperature 0 (text, token ids, logprobs, usage)', async () => {
    const body = { ...GREEDY, logprobs: true, top_logprobs: 2 };
    const [full, streamed] = await Promise.all([
      run(body),
      stream(h.page, h.key, { ...body, stream_options: { include_usage: true, continuous_usage_stats: true } }),
    ]);
    expect(streamed.ok).toBe(true);
    expect(ids(full)).toHaveLength(6);
    expect(streamed.texts[0]).toBe(text(full));
    const chunks = streamed.chunks;
    expect(chunks[0].prompt_token_ids).toEqual(full.prompt_token_ids);
    const streamedIds = chunks.flatMap((c) => c.choices.flatMap((x: any) => x.token_ids ?? []));
    expect(streamedIds).toEqual(ids(full));
    const streamedLogprobs = chunks.flatMap((c) => c.choices.flatMap((x: any) => x.logprobs?.content ?? []));
    expect(streamedLogprobs.map((e: any) => e.token)).toEqual(full.choices[0].logprobs.content.map((e: any) => e.token));
    for (const [i, e] of streamedLogprobs.entries()) expect(e.logprob).toBeCloseTo(full.choices[0].logprobs.content[i].logprob, 4);
    const finals = chunks.flatMap((c) => c.choices.filter((x: any) => x.finish_reason));
    expect(finals).toHaveLength(1);
    expect(finals[0].finish_reason).toBe('length');
    const usage = chunks.at(-1).usage;
    expect(chunks.at(-1).choices).toEqual([]);
    expect(usage).toMatchObject({ prompt_tokens: full.usage.prompt_tokens, completion_tokens: 6, total_tokens: full.usage.total_tokens });
    // continuous_usage_stats: every content chunk counts the tokens so far.
    const counts = chunks
      .filter((c) => c.choices.some((x: any) => x.delta?.content !== undefined) && c.usage)
      .map((c) => c.usage.completion_tokens);
    expect(counts.length).toBeGreaterThan(0);
    expect(counts).toEqual([...counts].sort((a, b) => a - b));
  }, 120_000);

  it('seeds: the same seed repeats, other seeds differ, choice i of n uses seed + i', async () => {
    const body = { ...GREEDY, temperature: 1.5 };
    const [a, again, b, c, n, streamedN] = await Promise.all([
      run({ ...body, seed: 11 }),
      run({ ...body, seed: 11 }),
      run({ ...body, seed: 12 }),
      run({ ...body, seed: 13 }),
      run({ ...body, seed: 11, n: 3 }),
      stream(h.page, h.key, { ...body, seed: 11, n: 3 }),
    ]);
    expect(ids(again)).toEqual(ids(a));
    expect(new Set([a, b, c].map((x) => ids(x).join(','))).size).toBeGreaterThan(1);
    expect(n.choices.map((_: unknown, i: number) => ids(n, i))).toEqual([ids(a), ids(b), ids(c)]);
    expect(n.choices.map((ch: any) => ch.index)).toEqual([0, 1, 2]);
    expect(n.usage.completion_tokens).toBe(18);
    // Streamed, the same seeds give the same choices, each under its own index.
    expect(streamedN.texts).toEqual([text(n, 0), text(n, 1), text(n, 2)]);
  }, 120_000);

  it('sampling controls: top_k 1, a tiny top_p and min_p 1 keep only the most likely token', async () => {
    // At temperature 2 a seeded draw leaves the greedy path; each control must bring it back.
    const hot = { ...GREEDY, temperature: 2 };
    const seeds = [21, 22, 23, 24];
    const [greedy, ...rest] = await Promise.all([
      run(GREEDY),
      ...seeds.map((seed) => run({ ...hot, seed })),
      ...seeds.flatMap((seed) => [run({ ...hot, seed, top_k: 1 }), run({ ...hot, seed, top_p: 1e-6 }), run({ ...hot, seed, min_p: 1 })]),
    ]);
    const free = rest.slice(0, seeds.length);
    const controlled = rest.slice(seeds.length);
    // The premise: without a control some seed samples off the greedy path.
    expect(free.some((c) => ids(c).join() !== ids(greedy).join())).toBe(true);
    for (const c of controlled) expect(ids(c)).toEqual(ids(greedy));
  }, 120_000);

  it('presence and frequency penalties: each greedy choice is the best token after its penalty', async () => {
    // The logprobs returned are the raw ones (before bias and penalties, as vLLM's default), so
    // the penalised choice can be checked from them: raw logprob - presence * seen - frequency * count.
    const presence = 1.5;
    const frequency = 1;
    const out = await run({
      ...GREEDY,
      max_tokens: 8,
      presence_penalty: presence,
      frequency_penalty: frequency,
      logprobs: true,
      top_logprobs: 20,
      return_tokens_as_token_ids: true,
    });
    const counts = new Map<number, number>();
    let changed = 0;
    out.choices[0].logprobs.content.forEach((step: any, t: number) => {
      const chosen = ids(out)[t];
      const scored = step.top_logprobs
        .map((e: any) => ({ id: Number(String(e.token).replace('token_id:', '')), lp: e.logprob }))
        .filter((e: any) => e.id > 2);
      const score = (e: { id: number; lp: number }) => e.lp - (counts.has(e.id) ? presence + frequency * counts.get(e.id)! : 0);
      const best = Math.max(...scored.map(score));
      const mine = scored.find((e: any) => e.id === chosen);
      expect(mine, `step ${t}: the chosen token is among the top 20`).toBeDefined();
      expect(score(mine)).toBeGreaterThanOrEqual(best - 1e-3);
      // vLLM's order puts the sampled token first: the raw argmax is the largest raw logprob.
      const rawBest = scored.reduce((a: any, b: any) => (b.lp > a.lp ? b : a));
      if (rawBest.id !== chosen) changed++;
      counts.set(chosen, (counts.get(chosen) ?? 0) + 1);
    });
    // The premise: the penalties moved at least one choice off the raw argmax.
    expect(changed).toBeGreaterThan(0);
  }, 120_000);

  it('stop strings, stop_token_ids, include_stop_str_in_output, min_tokens, ignore_eos, EOS', async () => {
    const [g, first] = await Promise.all([
      run(GREEDY),
      run({ model: MODEL, messages: ASK, temperature: 0, max_tokens: 5, return_token_ids: true }),
    ]);
    const full = text(g);
    expect(full.length).toBeGreaterThan(1);
    const stop = full[1];
    const cut = full.indexOf(stop);
    const stopId = ids(g)[2];
    const stopAt = ids(g).indexOf(stopId);
    const t0 = ids(first)[0];
    const [byString, streamed, withStr, byId, minTokens, natural] = await Promise.all([
      run({ ...GREEDY, stop: ['\u0000never', stop] }),
      stream(h.page, h.key, { ...GREEDY, stop: ['\u0000never', stop] }),
      run({ ...GREEDY, stop, include_stop_str_in_output: true }),
      run({ ...GREEDY, stop_token_ids: [stopId] }),
      run({ model: MODEL, messages: ASK, temperature: 0, max_tokens: 4, stop_token_ids: [t0], min_tokens: 2, return_token_ids: true }),
      run({ model: MODEL, messages: ASK, temperature: 0, max_tokens: 5, return_token_ids: true }),
    ]);
    expect(byString.choices[0]).toMatchObject({ finish_reason: 'stop', stop_reason: stop, message: { content: full.slice(0, cut) } });
    expect(streamed.texts[0]).toBe(full.slice(0, cut));
    expect(streamed.chunks.flatMap((ch) => ch.choices.filter((x: any) => x.finish_reason))).toMatchObject([
      { finish_reason: 'stop', stop_reason: stop },
    ]);
    expect(withStr.choices[0]).toMatchObject({
      finish_reason: 'stop',
      stop_reason: stop,
      message: { content: full.slice(0, cut + stop.length) },
    });
    expect(byId.choices[0]).toMatchObject({ finish_reason: 'stop', stop_reason: stopId });
    expect(ids(byId)).toEqual(ids(g).slice(0, stopAt + 1));
    expect(byId.usage.completion_tokens).toBe(stopAt + 1);
    // min_tokens: the stop token (and EOS) cannot end the choice before 2 tokens.
    expect(ids(minTokens)[0]).not.toBe(t0);
    expect(ids(minTokens).length).toBeGreaterThanOrEqual(2);
    if (minTokens.choices[0].finish_reason === 'stop') expect([t0, EOS]).toContain(ids(minTokens).at(-1));
    // Without ignore_eos a choice ends at EOS (stop_reason null, EOS counted) or at max_tokens.
    const end = natural.choices[0];
    if (end.finish_reason === 'stop') {
      expect(end.stop_reason).toBeNull();
      expect(ids(natural).at(-1)).toBe(EOS);
      expect(ids(natural).indexOf(EOS)).toBe(ids(natural).length - 1);
    } else {
      expect(ids(natural)).toHaveLength(5);
    }
    expect(ids(natural)).toEqual(ids(first));
  }, 120_000);

  it('max_completion_tokens wins over the deprecated max_tokens; the context-length rule', async () => {
    const models = await api(h.page, 'GET', '/v1/models', { key: h.key });
    const entry = models.json.data.find((m: any) => m.id === MODEL);
    expect(entry).toMatchObject({ object: 'model', root: MODEL });
    const limit: number = entry.max_model_len;
    expect(limit).toBeGreaterThan(100);
    const [both, deprecated, probe] = await Promise.all([
      run({ ...GREEDY, max_tokens: 4, max_completion_tokens: 2 }),
      run({ ...GREEDY, max_tokens: 3 }),
      run({ model: MODEL, messages: ASK, temperature: 0, max_tokens: 1, return_token_ids: true }),
    ]);
    expect(both.usage.completion_tokens).toBe(2);
    expect(deprecated.usage.completion_tokens).toBe(3);
    const p = probe.usage.prompt_tokens;
    const t0 = ids(probe)[0];
    const [tooMany, exactly] = await Promise.all([
      complete(h.page, h.key, { model: MODEL, messages: ASK, max_completion_tokens: limit - p + 1 }),
      // The largest allowed budget; the first token stops it, so it generates one token.
      run({ model: MODEL, messages: ASK, temperature: 0, max_tokens: limit - p, stop_token_ids: [t0] }),
    ]);
    expect(tooMany).toMatchObject({ ok: false, status: 400, name: 'BadRequestError' });
    expect((tooMany as any).message).toContain(`maximum context length is ${limit} tokens`);
    expect(exactly.choices[0]).toMatchObject({ finish_reason: 'stop', stop_reason: t0 });
  }, 120_000);
});

/** Beam search refuses logit_bias (it ranks raw logprobs), so the beams may end in EOS. */
const BEAMS = {
  model: MODEL,
  messages: ASK,
  temperature: 0,
  max_tokens: 3,
  ignore_eos: true,
  return_token_ids: true,
  n: 2,
  use_beam_search: true,
};

/**
 * One greedy token out of "3" and "4" (ids 60 and 61: the digits of the question's prompt).
 * bad_words is tested on a digit because digits are single tokens however they are written: a
 * word decoded from an arbitrary token may not tokenise back to it (vLLM strips its leading
 * spaces, and a lone byte of a UTF-8 sequence decodes to U+FFFD).
 */
const DIGITS = { model: MODEL, messages: ASK, temperature: 0, max_tokens: 1, return_token_ids: true, allowed_token_ids: [60, 61] };

describe('logits: logit_bias, allowed_token_ids, bad_words, beam search', () => {
  it('shapes every token the way it says', async () => {
    const [plain, forced, allowed, beams, beamsHalf] = await Promise.all([
      run(DIGITS),
      run({ ...GREEDY, max_tokens: 3, logit_bias: { '70': 100 } }),
      run({ ...GREEDY, temperature: 1, seed: 3, logit_bias: {}, allowed_token_ids: [60, 61, 70] }),
      run({ ...BEAMS, length_penalty: 1 }),
      run({ ...BEAMS, length_penalty: 0.5 }),
    ]);
    expect(ids(forced)).toEqual([70, 70, 70]);
    for (const id of ids(allowed)) expect([60, 61, 70]).toContain(id);
    const word = text(plain);
    const [banned, beamsAgain] = await Promise.all([run({ ...DIGITS, bad_words: [word] }), run({ ...BEAMS, length_penalty: 1 })]);
    // The other digit: the greedy one is a bad word now.
    expect(ids(banned)).toEqual([60 + 61 - ids(plain)[0]]);
    expect(text(banned)).not.toBe(word);
    // Beam search: n distinct beams, deterministic.
    for (const b of [beams, beamsHalf]) {
      expect(b.choices).toHaveLength(2);
      expect(ids(b, 0).join(',')).not.toBe(ids(b, 1).join(','));
    }
    expect([ids(beamsAgain, 0), ids(beamsAgain, 1)]).toEqual([ids(beams, 0), ids(beams, 1)]);
  }, 120_000);
});

describe('logprobs shapes', () => {
  it('logprobs / top_logprobs / return_tokens_as_token_ids / omitted / false / prompt_logprobs', async () => {
    const base = { model: MODEL, messages: ASK, temperature: 0, max_tokens: 2, ignore_eos: true, return_token_ids: true };
    const [top, asIds, omitted, off, prompt] = await Promise.all([
      run({ ...base, logprobs: true, top_logprobs: 3 }),
      run({ ...base, logprobs: true, top_logprobs: 2, return_tokens_as_token_ids: true }),
      run(base),
      run({ ...base, logprobs: false }),
      run({ ...base, max_tokens: 1, prompt_logprobs: 2 }),
    ]);
    const content = top.choices[0].logprobs.content;
    expect(content).toHaveLength(2);
    for (const e of content) {
      expect(e.logprob).toBeLessThanOrEqual(0);
      expect(e.bytes).toEqual([...new TextEncoder().encode(e.token)]);
      expect(e.top_logprobs).toHaveLength(3);
      // Greedy: the chosen token is the most likely one.
      expect(e.top_logprobs[0]).toMatchObject({ token: e.token });
      expect(e.top_logprobs[0].logprob).toBeCloseTo(e.logprob, 5);
      const lps = e.top_logprobs.map((t: any) => t.logprob);
      expect(lps).toEqual([...lps].sort((a: number, b: number) => b - a));
    }
    expect(content.map((e: any) => e.token).join('')).toBe(new TextDecoder().decode(new Uint8Array(content.flatMap((e: any) => e.bytes))));
    const idTokens = asIds.choices[0].logprobs.content;
    expect(idTokens.map((e: any) => e.token)).toEqual(ids(asIds).map((i) => `token_id:${i}`));
    for (const e of idTokens) for (const t of e.top_logprobs) expect(t.token).toMatch(/^token_id:\d+$/);
    // Hearth's choice (README): omitted logprobs still carry the chosen tokens, for ART.
    expect(omitted.choices[0].logprobs.content.map((e: any) => [e.token, e.top_logprobs])).toEqual(
      ids(omitted).map((i) => [`token_id:${i}`, []]),
    );
    expect(off.choices[0].logprobs).toBeNull();
    // prompt_logprobs: one entry per prompt token, the first null; each holds the prompt's own
    // token (with its rank) and at most 2 others, and a better rank never has a lower logprob.
    const pl = prompt.prompt_logprobs;
    expect(pl).toHaveLength(prompt.prompt_token_ids.length);
    expect(pl[0]).toBeNull();
    for (let i = 1; i < pl.length; i++) {
      const entry = pl[i][String(prompt.prompt_token_ids[i])];
      expect(entry, `prompt token ${i}`).toBeDefined();
      expect(entry.rank).toBeGreaterThanOrEqual(1);
      expect(entry.logprob).toBeLessThanOrEqual(0);
      expect(typeof entry.decoded_token).toBe('string');
      expect(Object.keys(pl[i]).length).toBeLessThanOrEqual(3);
      const byRank = Object.values<any>(pl[i]).sort((a, b) => a.rank - b.rank);
      for (let r = 1; r < byRank.length; r++)
        expect(byRank[r].logprob, `prompt token ${i}`).toBeLessThanOrEqual(byRank[r - 1].logprob + 1e-4);
    }
    expect(top.prompt_logprobs).toBeNull();
  }, 120_000);
});

describe('the prompt: templates, generation prompt, echo, truncation, documents', () => {
  it('renders and tokenises the prompt as asked', async () => {
    const p = { model: MODEL, temperature: 0, max_tokens: 1, return_token_ids: true };
    const plain = '{% for m in messages %}{{ m.content }}{% endfor %}';
    const partial = [...ASK, { role: 'assistant', content: 'The sum is' }];
    const [dflt, noGen, special, truncated, docs, custom, kwargs, echo, noEcho] = await Promise.all([
      run({ ...p, messages: ASK }),
      run({ ...p, messages: ASK, add_generation_prompt: false }),
      run({ ...p, messages: ASK, add_special_tokens: true }),
      run({ ...p, messages: ASK, truncate_prompt_tokens: 5 }),
      run({ ...p, messages: ASK, documents: [{ title: 'Sums', text: 'Three plus four is seven.' }] }),
      run({ ...p, messages: ASK, chat_template: plain }),
      run({ ...p, messages: ASK, chat_template: `{{ prefix }}${plain}`, chat_template_kwargs: { prefix: 'Question. ' } }),
      run({ ...p, max_tokens: 2, messages: partial, continue_final_message: true, add_generation_prompt: false, echo: true }),
      run({ ...p, max_tokens: 2, messages: partial, continue_final_message: true, add_generation_prompt: false }),
    ]);
    const full: number[] = dflt.prompt_token_ids;
    expect(dflt.usage.prompt_tokens).toBe(full.length);
    // The generation prompt is the template's tail "<|im_start|>assistant\n".
    expect(full.slice(0, noGen.prompt_token_ids.length)).toEqual(noGen.prompt_token_ids);
    expect(full[noGen.prompt_token_ids.length]).toBe(1);
    // tiny-chat's tokenizer adds no BOS: add_special_tokens changes nothing here.
    expect(special.prompt_token_ids).toEqual(full);
    expect(truncated.prompt_token_ids).toEqual(full.slice(-5));
    expect(truncated.usage.prompt_tokens).toBe(5);
    expect(docs.usage.prompt_tokens).toBeGreaterThan(full.length + 5);
    expect(custom.prompt_token_ids).not.toContain(1);
    expect(custom.prompt_token_ids.length).toBeLessThan(full.length);
    expect(kwargs.prompt_token_ids.length).toBeGreaterThan(custom.prompt_token_ids.length);
    // continue_final_message: the assistant turn stays open (no <|im_end|> after it); echo
    // prepends its text to the answer.
    expect(echo.prompt_token_ids.at(-1)).not.toBe(EOS);
    expect(text(echo)).toBe('The sum is' + text(noEcho));
  }, 120_000);

  it('special tokens in the output: skip_special_tokens and spaces_between_special_tokens', async () => {
    const body = {
      model: MODEL,
      messages: ASK,
      temperature: 0,
      max_tokens: 3,
      ignore_eos: true,
      allowed_token_ids: [EOS],
      return_token_ids: true,
    };
    const [skipped, kept, spaced] = await Promise.all([
      run(body),
      run({ ...body, skip_special_tokens: false }),
      run({ ...body, skip_special_tokens: false, spaces_between_special_tokens: true }),
    ]);
    expect(ids(kept)).toEqual([EOS, EOS, EOS]);
    expect(text(skipped)).toBe('');
    expect(text(kept)).toBe('<|im_end|><|im_end|><|im_end|>');
    // As vLLM with a fast tokenizer: no spaces are inserted.
    expect(text(spaced)).toBe(text(kept));
  }, 120_000);
});

describe('identity, caching and accepted pass-through fields', () => {
  it('request_id and X-Request-Id name the completion; cache_salt separates prefix caches', async () => {
    const long = { title: 'Notes', text: 'Adding one-digit numbers: '.repeat(12) };
    const cached = { model: MODEL, messages: ASK, documents: [long], temperature: 0, max_tokens: 1 };
    const first = await run({ ...cached, cache_salt: 'tenant-a', request_id: 'my-request-1' });
    expect(first.id).toBe('chatcmpl-my-request-1');
    expect(first.usage.prompt_tokens).toBeGreaterThan(48);
    const [same, other, header] = await Promise.all([
      run({ ...cached, cache_salt: 'tenant-a' }),
      run({ ...cached, cache_salt: 'tenant-b' }),
      api(h.page, 'POST', '/v1/chat/completions', {
        key: h.key,
        body: { ...cached, cache_salt: 'tenant-c', request_id: 'body-id' },
        headers: { 'X-Request-Id': 'header-id' },
      }),
    ]);
    expect(same.usage.prompt_tokens_details.cached_tokens).toBeGreaterThanOrEqual(16);
    expect(other.usage.prompt_tokens_details.cached_tokens).toBe(0);
    expect(header.status).toBe(200);
    expect(header.json.id).toBe('chatcmpl-header-id');
    expect(text(same)).toBe(text(first));
  }, 120_000);

  it('accepts priority 0, user, reasoning fields, kv_transfer_params, engine_xargs, mm_processor_kwargs; refuses logits_processors', async () => {
    const body = { model: MODEL, messages: ASK, temperature: 0, max_tokens: 2, ignore_eos: true };
    const [base, extras, processors] = await Promise.all([
      run(body),
      run({
        ...body,
        priority: 0,
        user: 'user-42',
        reasoning_effort: 'low',
        include_reasoning: true,
        kv_transfer_params: { do_remote_prefill: false },
        engine_xargs: { note: 'e2e' },
        mm_processor_kwargs: {},
      }),
      complete(h.page, h.key, { ...body, logits_processors: ['my.module.Processor'] }),
    ]);
    expect(text(extras)).toBe(text(base));
    expect(extras.kv_transfer_params).toBeNull();
    expect(extras.choices[0].message.reasoning_content).toBeNull();
    expect(processors).toMatchObject({ ok: false, status: 400, name: 'BadRequestError' });
  }, 120_000);
});
