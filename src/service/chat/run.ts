/**
 * Running a planned chat request: the engine's events turned into choice steps (a stop string
 * stops its choice in the engine; once every choice has finished the iteration is left, which
 * ends the request in the engine), then either gathered into the finished response or written
 * as stream chunks. An error after the first chunk travels in the stream, as vLLM's does.
 *
 * Not here: planning (plan.ts), the response and chunk shapes (response.ts, chunks.ts).
 * Reference: docs/reference/vllm-chat.md §1.2, §4.
 */
import type { GenerationHandle, PromptLogprob } from '../../engine/generate/types';
import { openaiError } from '../error-envelope';
import type { ChoiceOutput, ChoiceStep } from './choice-output';
import { ChunkWriter } from './chunks';
import type { PlannedRun } from './plan';
import { ResponseBuilder } from './response';
import type { ChatCompletion, ChatCompletionChunk, StreamErrorEvent } from './response-types';

type RunEvent =
  | { type: 'prefilled'; cachedTokens: number; promptLogprobs: (PromptLogprob | null)[] | null }
  | { type: 'step'; step: ChoiceStep };

/**
 * The engine's events as choice steps. Stops a choice in the engine when a stop string ended
 * it, and leaves the iteration (which ends the request in the engine) once every choice is done.
 */
async function* runSteps(choices: ChoiceOutput[], handle: GenerationHandle): AsyncGenerator<RunEvent> {
  for await (const ev of handle) {
    if (ev.type === 'prefilled') {
      yield { type: 'prefilled', cachedTokens: ev.cachedTokens, promptLogprobs: ev.promptLogprobs };
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

export async function collectResponse(run: PlannedRun, handle: GenerationHandle, signal?: AbortSignal): Promise<ChatCompletion> {
  const builder = new ResponseBuilder(run.plan);
  for await (const ev of runSteps(run.choices, handle)) {
    if (ev.type === 'prefilled') builder.prefilled(ev.cachedTokens, ev.promptLogprobs);
    else builder.add(ev.step);
  }
  signal?.throwIfAborted();
  return builder.build();
}

export async function* streamResponse(
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
    yield openaiError(500, message);
    return;
  }
  const usage = writer.usage();
  if (usage) yield usage;
}
