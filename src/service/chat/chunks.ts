/**
 * The streamed response, chunk by chunk, as vLLM's `chat_completion_stream_generator` writes it:
 * a role chunk per choice first (`{role, content: ""}`; the first also carries prompt_token_ids
 * with return_token_ids), an echo chunk per choice with `echo`, then one chunk per choice step
 * (exactly one choice per chunk) with the step's delta, logprobs and token ids, the finish chunk
 * carrying the choice's last delta with finish_reason and stop_reason, and after every choice
 * finished a usage chunk with `choices: []` when stream_options.include_usage. With
 * continuous_usage_stats every chunk carries usage with that choice's running completion count.
 *
 * A step whose text the output parser withholds still sends its tokens' logprobs (with an empty
 * delta), where vLLM drops them: RL clients rebuild each choice's tokens from the chunks.
 *
 * Not here: SSE framing and `[DONE]` (the route), turning engine events into steps.
 * Reference: docs/reference/vllm-chat.md §4 "Streaming".
 */
import type { ChoiceStep } from './choice-output';
import { parsedFinishReason, type OutputDelta, type StreamingOutputParser } from './output-parser';
import type { ChatPlan } from './plan';
import type { ChatCompletionChunk, ChunkChoice, ChunkDelta, Usage } from './response-types';

function merge(a: OutputDelta | null, b: OutputDelta | null): OutputDelta | null {
  if (!a) return b;
  if (!b) return a;
  const out: OutputDelta = { ...a };
  if (b.content !== undefined) out.content = (out.content ?? '') + b.content;
  if (b.reasoning !== undefined) out.reasoning = (out.reasoning ?? '') + b.reasoning;
  if (b.toolCalls !== undefined) out.toolCalls = [...(out.toolCalls ?? []), ...b.toolCalls];
  return out;
}

function chunkDelta(d: OutputDelta | null): ChunkDelta {
  const out: ChunkDelta = {};
  if (!d) return out;
  if (d.content !== undefined) out.content = d.content;
  if (d.reasoning !== undefined) {
    out.reasoning_content = d.reasoning;
    out.reasoning = d.reasoning;
  }
  if (d.toolCalls !== undefined) out.tool_calls = d.toolCalls;
  return out;
}

export class ChunkWriter {
  private readonly parsers: StreamingOutputParser[];
  private readonly completion: number[];
  private cachedTokens = 0;

  constructor(private readonly plan: ChatPlan) {
    this.parsers = Array.from({ length: plan.n }, () => plan.parser.stream());
    this.completion = Array.from({ length: plan.n }, () => 0);
  }

  private chunk(choice: ChunkChoice): ChatCompletionChunk {
    const { id, created, model } = this.plan;
    const c: ChatCompletionChunk = { id, object: 'chat.completion.chunk', created, model, choices: [choice] };
    if (this.plan.continuousUsage) {
      const prompt = this.plan.prompt.tokenIds.length;
      const done = this.completion[choice.index];
      c.usage = { prompt_tokens: prompt, completion_tokens: done, total_tokens: prompt + done };
    }
    return c;
  }

  /** The role chunks, then the echo chunks. */
  opening(): ChatCompletionChunk[] {
    const out: ChatCompletionChunk[] = [];
    for (let index = 0; index < this.plan.n; index++) {
      const c = this.chunk({ index, delta: { role: this.plan.prompt.role, content: '' }, logprobs: null, finish_reason: null });
      if (index === 0 && this.plan.returnTokenIds) c.prompt_token_ids = [...this.plan.prompt.tokenIds];
      out.push(c);
    }
    if (this.plan.prompt.echo) {
      for (let index = 0; index < this.plan.n; index++) {
        out.push(this.chunk({ index, delta: { content: this.plan.prompt.echo }, logprobs: null, finish_reason: null }));
      }
    }
    return out;
  }

  prefilled(cachedTokens: number): void {
    this.cachedTokens = cachedTokens;
  }

  /** The chunk of one step, or null when the step has nothing to send. */
  step(step: ChoiceStep): ChatCompletionChunk | null {
    const parser = this.parsers[step.index];
    let delta = step.text || step.tokens.length ? parser.push(step.text) : null;
    if (step.finish) delta = merge(delta, parser.finish());
    if (!delta && step.tokens.length === 0 && !step.finish) return null;
    this.completion[step.index] += step.tokens.length;

    const choice: ChunkChoice = {
      index: step.index,
      delta: chunkDelta(delta),
      logprobs: this.plan.logprobs ? { content: this.plan.logprobs.entries(step.tokens) } : null,
      finish_reason: null,
    };
    if (step.finish) {
      choice.finish_reason = parsedFinishReason(step.finish.reason, parser.calledTools);
      choice.stop_reason = step.finish.stopReason;
    }
    choice.token_ids = this.plan.returnTokenIds ? step.tokens.map((t) => t.id) : null;
    return this.chunk(choice);
  }

  /** The final usage chunk, when asked for. */
  usage(): ChatCompletionChunk | null {
    if (!this.plan.includeUsage) return null;
    const { id, created, model } = this.plan;
    const prompt = this.plan.prompt.tokenIds.length;
    const completion = this.completion.reduce((a, b) => a + b, 0);
    const usage: Usage = {
      prompt_tokens: prompt,
      total_tokens: prompt + completion,
      completion_tokens: completion,
      prompt_tokens_details: { cached_tokens: this.cachedTokens },
    };
    return { id, object: 'chat.completion.chunk', created, model, choices: [], usage };
  }
}
