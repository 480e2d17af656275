/**
 * POST /v1/chat/completions as a use case: check the request, resolve the model (a base model or
 * a checkpoint's LoRA adapter over it), load it through the engine, render and tokenise the
 * prompt, apply the context-length rule, compile the structured-output constraint (xgrammar),
 * choose the output parser (reasoning, tool calls), plan the run, and only then start generating, so every
 * error up to here is an HTTP error and never a half-sent stream. The reply is the finished
 * response, or the stream of chunks (the route frames them as SSE).
 *
 * One AbortSignal runs from the caller through to the engine: aborting it (the client went away)
 * frees the request's batch slots at once. A stop string stops its choice in the engine too.
 *
 * Not here: HTTP (src/api/routes/chat.ts), consuming the engine's events (run.ts), the checks
 * (check.ts).
 * Reference: docs/reference/vllm-chat.md §9 (order of validation), §4 (formats).
 */
import type { Principal } from '../principal';
import type { ServiceContext } from '../context';
import { choiceConstraints, prepareStructuredOutput } from '../structured/structured-output';
import { checkBackend } from './backend-check';
import { checkChatRequest } from './check';
import { ChatRequestError } from './errors';
import { checkpointAdapter } from '../adapters/checkpoint-adapter';
import { maxTokensFor } from './max-tokens';
import { planChat } from './plan';
import { buildPrompt } from './prompt';
import type { ChatRequest } from './request';
import { resolveModel } from './resolve-model';
import type { ChatCompletion, ChatCompletionChunk, StreamErrorEvent } from './response-types';
import { collectResponse, streamResponse } from './run';
import { inferenceEngine, serveModel } from './served-models';
import { adjustRequest, chatOutputOptions, chatOutputParser } from './tool-calls-output-parser';

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
  checkBackend(req, engine.capabilities, { checkpoint: resolved.checkpoint !== null, tokenizer: served.tokenizer });
  const prompt = buildPrompt(req, served);
  const maxTokens = maxTokensFor(req, prompt.tokenIds.length, served);
  // The constraint is compiled (or found in the cache) now, so a constraint xgrammar refuses is a 400.
  const structured = await prepareStructuredOutput(req, {
    tokenizer: served.tokenizer,
    vocabSize: served.config.vocabSize,
    eosTokenIds: served.eosTokenIds,
  });
  if (structured && req.use_beam_search) {
    throw new ChatRequestError(
      'use_beam_search cannot be combined with structured outputs: beams are ranked by their raw logprobs, which a grammar would cut.',
      structured.spec.param,
    );
  }
  const template = served.chatTemplates.forRequest({ hasTools: (req.tools?.length ?? 0) > 0, override: req.chat_template });
  const outputOptions = chatOutputOptions(req, {
    templateSource: template.source,
    promptText: prompt.text,
    turnEnd: served.tokenizer.specialTokens.eos_token ?? null,
    hasToken: (token) => served.tokenizer.tokenToId(token) !== undefined,
  });
  const adapter = resolved.checkpoint ? await checkpointAdapter(ctx, caller, resolved.checkpoint.model, resolved.checkpoint.record) : null;
  const run = planChat({
    req: adjustRequest(req, outputOptions),
    served,
    servedName: resolved.servedName,
    prompt,
    maxTokens,
    adapter,
    parser: chatOutputParser(outputOptions),
    requestId: opts.requestIdHeader ?? req.request_id ?? randomRequestId(),
    now: ctx.now(),
    signal: opts.signal,
  });
  // Made last: from here the engine owns the matchers and disposes them however the choice ends.
  run.generation.constraints = choiceConstraints(structured, run.plan.n, {
    tokenizer: served.tokenizer,
    reasoning: outputOptions.reasoning,
  });
  // The scheduler shares batch rows fairly between principals (issue 26).
  run.generation.owner = caller.id;
  const handle = engine.generate(run.generation);
  if (req.stream) return { stream: true, chunks: streamResponse(run, handle, opts.signal) };
  return { stream: false, response: await collectResponse(run, handle, opts.signal) };
}
