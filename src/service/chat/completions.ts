/**
 * POST /v1/chat/completions as a use case: check the request, resolve the model (a base model or
 * a checkpoint's LoRA adapter over it), load it through the engine, render and tokenise the
 * prompt, apply the context-length rule, plan the run, and only then start generating, so every
 * error up to here is an HTTP error and never a half-sent stream. The reply is the finished
 * response, or the stream of chunks (the route frames them as SSE).
 *
 * One AbortSignal runs from the caller through to the engine: aborting it (the client went away)
 * frees the request's batch slots at once. A stop string stops its choice in the engine too.
 *
 * Not here: HTTP (src/api/routes/chat.ts), the per-step logic (choice-output.ts, chunks.ts,
 * response.ts), the checks (check.ts).
 * Reference: vllm-chat.md §9 (order of validation), §4 (formats).
 */
import type { GenerationHandle } from '../../engine/generate/types';
import type { Principal } from '../api-keys';
import type { ServiceContext } from '../context';
import { checkChatRequest } from './check';
import type { ChoiceOutput, ChoiceStep } from './choice-output';
import { ChunkWriter } from './chunks';
import { checkpointAdapter } from './lora-adapter';
import { maxTokensFor } from './max-tokens';
import { outputParserFor } from './output-parser';
import { planChat, type PlannedRun } from './plan';
import { buildPrompt } from './prompt';
import type { ChatRequest } from './request';
import { resolveModel } from './resolve-model';
import { ResponseBuilder } from './response';
import type { ChatCompletion, ChatCompletionChunk, StreamErrorEvent } from './response-types';
import { inferenceEngine, serveModel } from './served-models';

export type ChatReply =
  | { stream: false; response: ChatCompletion }
  | { stream: true; chunks: AsyncIterable<ChatCompletionChunk | StreamErrorEvent> };

export interface ChatCallOptions {
  /** Aborted when the client goes away. */
  signal?: AbortSignal;
  /** The X-Request-Id header, which wins over the body's request_id (vLLM). */
  requestIdHeader?: string;
}

/** vLLM's `random_uuid()`: 32 hex digits. */
function randomRequestId(): string {
  return crypto.randomUUID().replaceAll('-', '');
}

export async function createChatCompletion(
  ctx: ServiceContext,
  caller: Principal,
  req: ChatRequest,
  opts: ChatCallOptions = {},
): Promise<ChatReply> {
  checkChatRequest(req, null);
  const resolved = await resolveModel(ctx, caller, req.model);
  const engine = await inferenceEngine(ctx);
  const served = await serveModel(ctx, engine, resolved.base.id);
  checkChatRequest(req, { vocabSize: served.config.vocabSize, maxModelLen: served.maxModelLen, generation: served.generation });
  const prompt = buildPrompt(req, served);
  const maxTokens = maxTokensFor(req, prompt.tokenIds.length, served);
  const adapter = resolved.checkpoint ? await checkpointAdapter(ctx, caller, resolved.checkpoint.model, resolved.checkpoint.record) : null;
  const run = planChat({
    req,
    served,
    servedName: resolved.servedName,
    prompt,
    maxTokens,
    adapter,
    parser: outputParserFor(req, served),
    requestId: opts.requestIdHeader ?? req.request_id ?? randomRequestId(),
    now: ctx.now(),
    signal: opts.signal,
  });
  const handle = engine.generate(run.generation);
  if (req.stream) return { stream: true, chunks: streamChunks(run, handle, opts.signal) };
  return { stream: false, response: await collect(run, handle, opts.signal) };
}

type RunEvent = { type: 'prefilled'; cachedTokens: number; event: Parameters<ResponseBuilder['prefilled']>[1] } | { type: 'step'; step: ChoiceStep };

/**
 * The engine's events as choice steps. Stops a choice in the engine when a stop string ended
 * it, and leaves the iteration (which ends the request in the engine) once every choice is done.
 */
async function* runSteps(choices: ChoiceOutput[], handle: GenerationHandle): AsyncGenerator<RunEvent> {
  for await (const ev of handle) {
    if (ev.type === 'prefilled') {
      yield { type: 'prefilled', cachedTokens: ev.cachedTokens, event: ev.promptLogprobs };
      continue;
    }
    const choice = choices[ev.choice];
    if (!choice) throw new Error(`The engine reported choice ${ev.choice} of a request with ${choices.length}.`);
    const step = ev.type === 'tokens' ? choice.push(ev.tokens) : choice.end(ev.reason, ev.stopTokenId);
    if (step?.stoppedByString) handle.stopChoice(ev.choice);
    if (step) yield { type: 'step', step };
    if (choices.every((c) => c.done)) return;
  }
  // The engine ended without finishing some choice (it was aborted): close them as vLLM would.
  for (const choice of choices) {
    const step = choice.end('abort', null);
    if (step) yield { type: 'step', step };
  }
}

async function collect(run: PlannedRun, handle: GenerationHandle, signal?: AbortSignal): Promise<ChatCompletion> {
  const builder = new ResponseBuilder(run.plan);
  for await (const ev of runSteps(run.choices, handle)) {
    if (ev.type === 'prefilled') builder.prefilled(ev.cachedTokens, ev.event);
    else builder.add(ev.step);
  }
  signal?.throwIfAborted();
  return builder.build();
}

async function* streamChunks(
  run: PlannedRun,
  handle: GenerationHandle,
  signal?: AbortSignal,
): AsyncGenerator<ChatCompletionChunk | StreamErrorEvent> {
  const writer = new ChunkWriter(run.plan);
  yield* writer.opening();
  try {
    for await (const ev of runSteps(run.choices, handle)) {
      if (signal?.aborted) return;
      if (ev.type === 'prefilled') {
        writer.prefilled(ev.cachedTokens);
        continue;
      }
      const chunk = writer.step(ev.step);
      if (chunk) yield chunk;
    }
  } catch (err) {
    if (signal?.aborted) return;
    // Headers are sent: the error travels in the stream, as vLLM does.
    const message = err instanceof Error ? err.message : String(err);
    console.error(`[hearth] ${run.plan.id} failed while streaming:`, err);
    yield { error: { message, type: 'InternalServerError', param: null, code: 500 } };
    return;
  }
  const usage = writer.usage();
  if (usage) yield usage;
}
