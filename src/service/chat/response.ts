/**
 * The non-streaming response: every choice's steps gathered, its whole text parsed once into
 * content / reasoning / tool calls, `echo` prepended, usage summed over the choices, and the
 * optional prompt logprobs and token ids, in vLLM's `ChatCompletionResponse` shape.
 *
 * Not here: turning engine events into steps (choice-output.ts), the streamed form (chunks.ts).
 * Reference: docs/reference/vllm-chat.md §4 "Non-streaming JSON", §5.
 */
import type { PromptLogprob } from '../../engine/generate/types';
import type { ChoiceFinish, ChoiceStep } from './choice-output';
import { formatPromptLogprobs, type LogprobEntry } from './logprobs';
import { parsedFinishReason } from './output-parser';
import type { ChatPlan } from './plan';
import type { ChatChoice, ChatCompletion, Usage } from './response-types';

interface Gathered {
  text: string;
  tokenIds: number[];
  logprobs: LogprobEntry[];
  finish: ChoiceFinish | null;
}

export class ResponseBuilder {
  private readonly gathered: Gathered[];
  private promptLogprobs: (PromptLogprob | null)[] | null = null;
  private cachedTokens = 0;

  constructor(private readonly plan: ChatPlan) {
    this.gathered = Array.from({ length: plan.n }, () => ({ text: '', tokenIds: [], logprobs: [], finish: null }));
  }

  prefilled(cachedTokens: number, promptLogprobs: (PromptLogprob | null)[] | null): void {
    this.cachedTokens = cachedTokens;
    this.promptLogprobs = promptLogprobs;
  }

  add(step: ChoiceStep): void {
    const g = this.gathered[step.index];
    g.text += step.text;
    for (const t of step.tokens) g.tokenIds.push(t.id);
    if (this.plan.logprobs) g.logprobs.push(...this.plan.logprobs.entries(step.tokens));
    if (step.finish) g.finish = step.finish;
  }

  usage(): Usage {
    const prompt = this.plan.prompt.tokenIds.length;
    const completion = this.gathered.reduce((sum, g) => sum + g.tokenIds.length, 0);
    return {
      prompt_tokens: prompt,
      total_tokens: prompt + completion,
      completion_tokens: completion,
      prompt_tokens_details: { cached_tokens: this.cachedTokens },
    };
  }

  build(): ChatCompletion {
    const { plan } = this;
    const choices: ChatChoice[] = this.gathered.map((g, index) => {
      const parsed = plan.parser.parse(g.text);
      let content = parsed.content;
      if (plan.prompt.echo) content = plan.prompt.echo + (content ?? '');
      const finish = g.finish ?? { reason: 'abort' as const, stopReason: null };
      return {
        index,
        message: {
          role: plan.prompt.role,
          content,
          refusal: null,
          annotations: null,
          audio: null,
          function_call: null,
          tool_calls: parsed.toolCalls,
          reasoning_content: parsed.reasoning,
          reasoning: parsed.reasoning,
        },
        logprobs: plan.logprobs ? { content: g.logprobs } : null,
        finish_reason: parsedFinishReason(finish.reason, parsed.toolCalls.length > 0),
        stop_reason: finish.stopReason,
        token_ids: plan.returnTokenIds ? g.tokenIds : null,
      };
    });
    return {
      id: plan.id,
      object: 'chat.completion',
      created: plan.created,
      model: plan.model,
      choices,
      service_tier: null,
      system_fingerprint: null,
      usage: this.usage(),
      prompt_logprobs: this.promptLogprobs ? formatPromptLogprobs(plan.tokenizer, this.promptLogprobs) : null,
      prompt_token_ids: plan.returnTokenIds ? [...plan.prompt.tokenIds] : null,
      kv_transfer_params: null,
    };
  }
}
