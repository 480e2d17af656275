// Shared by the chat unit tests: the bundled models' real files (tokenizer, chat template,
// generation_config) as the ServedModel the engine would hand the service (without weights on a
// GPU), generated tokens as the engine reports them, and engine event sequences as a
// GenerationHandle (what a run consumes; the tests write the sequences by hand); and a request run
// through the chat service's steps (prompt, output options, plan, response and stream) over a
// model output given as text.
import type { GenerationEvent, GenerationHandle, SampledToken, ServedModel } from '../../../src/engine/generate/types';
import { loadModelFiles } from '../../../src/engine/model/files/repo';
import { BundledSource } from '../../../src/engine/model/sources/bundled-source';
import { mulberry32 } from '../../../src/engine/tensor/random';
import { planChat } from '../../../src/service/chat/plan';
import { buildPrompt } from '../../../src/service/chat/prompt';
import type { ChatRequest } from '../../../src/service/chat/request';
import type { ChatCompletionChunk, StreamErrorEvent } from '../../../src/service/chat/response-types';
import { collectResponse, streamResponse } from '../../../src/service/chat/run';
import { adjustRequest, chatOutputOptions, chatOutputParser } from '../../../src/service/chat/tool-calls-output-parser';

const cache = new Map<string, Promise<ServedModel>>();

/** A bundled model's files as a ServedModel; maxModelLen is max_position_embeddings unless given. */
export function servedModel(name: 'tiny-chat' | 'tiny-qwen2' | 'tiny-qwen3', maxModelLen?: number): Promise<ServedModel> {
  const key = `${name}:${maxModelLen ?? ''}`;
  let p = cache.get(key);
  if (!p) {
    p = loadModelFiles(new BundledSource(`models/${name}/`)).then((files) => ({
      id: `hearth/${name}`,
      config: files.config,
      tokenizer: files.tokenizer,
      chatTemplates: files.chatTemplates,
      generation: files.generation,
      eosTokenIds: files.eosTokenIds,
      maxModelLen: maxModelLen ?? files.config.maxPositionEmbeddings,
    }));
    cache.set(key, p);
  }
  return p;
}

/** A seeded generator for logprob values and choices. */
export const rng = mulberry32;

/**
 * Tokens as the sampler reports them: each with a raw logprob and, when `top` > 0, vLLM's
 * alternatives order (the sampled token first when it is not rank 1).
 */
export function sampled(ids: readonly number[], top = 0, seed = 1): SampledToken[] {
  const r = rng(seed);
  return ids.map((id) => {
    const logprob = -r() * 3;
    const topLogprobs = [];
    for (let k = 0; k < top; k++)
      topLogprobs.push({ id: k === 0 ? id : (id + k * 7) % 4000, logprob: k === 0 ? logprob : logprob - 0.5 * k });
    return { id, logprob, topLogprobs };
  });
}

/** A GenerationHandle over a fixed event list, recording stopChoice calls and whether iteration was left early. */
export function handleOf(events: GenerationEvent[]): GenerationHandle & { stopped: number[]; consumed(): number } {
  const stopped: number[] = [];
  let next = 0;
  return {
    stopped,
    consumed: () => next,
    stopChoice(choice: number) {
      stopped.push(choice);
    },
    [Symbol.asyncIterator]() {
      return {
        async next() {
          if (next >= events.length) return { done: true, value: undefined };
          return { done: false, value: events[next++] };
        },
        async return() {
          return { done: true, value: undefined };
        },
      };
    },
  };
}

/** `prefilled`, then each choice's tokens one event per token (interleaved), then `finished`. */
export function eventsFor(
  choices: { tokens: SampledToken[]; finish?: { reason: 'stop' | 'length' | 'abort'; stopTokenId?: number | null } }[],
  prefilled: Partial<Extract<GenerationEvent, { type: 'prefilled' }>> = {},
): GenerationEvent[] {
  const events: GenerationEvent[] = [{ type: 'prefilled', promptTokens: 0, cachedTokens: 0, promptLogprobs: null, ...prefilled }];
  const longest = Math.max(...choices.map((c) => c.tokens.length));
  for (let step = 0; step < longest; step++) {
    choices.forEach((c, choice) => {
      if (step < c.tokens.length) events.push({ type: 'tokens', choice, tokens: [c.tokens[step]] });
    });
  }
  choices.forEach((c, choice) => {
    if (c.finish) events.push({ type: 'finished', choice, reason: c.finish.reason, stopTokenId: c.finish.stopTokenId ?? null });
  });
  return events;
}

/** A tool as a client sends it. */
export const weatherTool = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Get the weather',
    parameters: { type: 'object', properties: { city: { type: 'string' } } },
  },
};

/**
 * `req` through the chat service's steps as createChatCompletion takes them (prompt, output options
 * from the template and vocabulary, the adjusted request, plan), with a model that writes `output`
 * and then its EOS token: the options, the non-streamed response and the stream's chunks.
 */
export async function runChat(served: ServedModel, req: ChatRequest, output: string) {
  const prompt = buildPrompt(req, served);
  const options = chatOutputOptions(req, {
    templateSource: served.chatTemplates.forRequest({ hasTools: (req.tools?.length ?? 0) > 0 }).source,
    promptText: prompt.text,
    turnEnd: served.tokenizer.specialTokens.eos_token ?? null,
    hasToken: (t) => served.tokenizer.tokenToId(t) !== undefined,
  });
  const plan = (stream: boolean) =>
    planChat({
      req: adjustRequest({ ...req, stream }, options),
      served,
      servedName: served.id,
      prompt,
      maxTokens: 200,
      adapter: null,
      parser: chatOutputParser(options),
      requestId: 'r1',
      now: 0,
    });
  const ids = [...served.tokenizer.encode(output, { addSpecialTokens: false }), served.tokenizer.eosTokenId!];
  const events = () => eventsFor([{ tokens: sampled(ids), finish: { reason: 'stop' } }]);
  const response = await collectResponse(plan(false), handleOf(events()));
  const chunks: (ChatCompletionChunk | StreamErrorEvent)[] = [];
  for await (const c of streamResponse(plan(true), handleOf(events()))) chunks.push(c);
  return { prompt: prompt.text, options, response, chunks: chunks as ChatCompletionChunk[] };
}
