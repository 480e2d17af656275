/**
 * Splitting a thinking model's output into reasoning and content at `</think>` (Qwen3,
 * DeepSeek-R1 and SmolLM3 style), as vLLM's reasoning parsers do (docs/reference/vllm-chat.md §7), with one
 * rule for streamed and non-streamed output:
 * - a `<think>` opening the output (after optional whitespace) is dropped: older templates let
 *   the model write it, newer ones put it in the prompt;
 * - everything before the first `</think>` is reasoning, everything after it content (null when
 *   empty);
 * - no `</think>`: everything is reasoning and content is null (thinking cut short), as vLLM's
 *   base parser and its newer Qwen3 parser do (v0.11's Qwen3 parser instead left the whole text
 *   as content unless both tags were present, which a stream cannot know in advance).
 * Whether a request is split at all (the template thinks; `enable_thinking` is not false; the
 * prompt did not already close the block) is decided by reasoningApplies.
 *
 * Streaming: the delta holding `</think>` is split into its reasoning and content parts; a
 * possible partial tag at the end of a delta is held back until the next one decides.
 *
 * Not here: tool calls in the content (tool-calls-hermes.ts), the chat wiring
 * (tool-calls-output-parser.ts).
 * Reference: vLLM vllm/reasoning/basic_parsers.py, qwen3_reasoning_parser.py,
 * deepseek_r1_reasoning_parser.py.
 */
import { partialTagSuffix } from './tool-calls-hermes';

export const THINK_START = '<think>';
export const THINK_END = '</think>';

export interface ReasoningSplit {
  /** The reasoning text ("" when the block was empty). */
  reasoning: string;
  /** Text after `</think>`, or null when there is none. */
  content: string | null;
}

const LEADING_THINK = /^\s*<think>/;

/** The reasoning and content of a whole output. */
export function splitReasoning(text: string): ReasoningSplit {
  const lead = LEADING_THINK.exec(text);
  const body = lead ? text.slice(lead[0].length) : text;
  const end = body.indexOf(THINK_END);
  if (end < 0) return { reasoning: body, content: null };
  const content = body.slice(end + THINK_END.length);
  return { reasoning: body.slice(0, end), content: content === '' ? null : content };
}

export interface ReasoningDelta {
  reasoning?: string;
  content?: string;
}

/** The same split, delta by delta. */
export class ReasoningStream {
  private state: 'lead' | 'reasoning' | 'content' = 'lead';
  private held = '';

  push(text: string): ReasoningDelta | null {
    this.held += text;
    return this.run(false);
  }

  finish(): ReasoningDelta | null {
    return this.run(true);
  }

  private run(atEnd: boolean): ReasoningDelta | null {
    const out: ReasoningDelta = {};
    if (this.state === 'lead') {
      const lead = LEADING_THINK.exec(this.held);
      const rest = this.held.replace(/^\s*/, '');
      if (lead) {
        this.held = this.held.slice(lead[0].length);
        this.state = 'reasoning';
      } else if (!atEnd && (rest === '' || THINK_START.startsWith(rest))) {
        return null;
      } else {
        this.state = 'reasoning';
      }
    }
    if (this.state === 'reasoning') {
      const end = this.held.indexOf(THINK_END);
      if (end >= 0) {
        if (end > 0) out.reasoning = this.held.slice(0, end);
        this.held = this.held.slice(end + THINK_END.length);
        this.state = 'content';
      } else {
        const keep = atEnd ? 0 : partialTagSuffix(this.held, THINK_END);
        if (this.held.length > keep) out.reasoning = this.held.slice(0, this.held.length - keep);
        this.held = this.held.slice(this.held.length - keep);
      }
    }
    if (this.state === 'content' && this.held) {
      out.content = this.held;
      this.held = '';
    }
    return out.reasoning !== undefined || out.content !== undefined ? out : null;
  }
}

/**
 * Whether a request's output is split into reasoning and content: the chat template uses
 * `<think>` blocks, `chat_template_kwargs.enable_thinking` is not false, and the prompt did not
 * already close a block for this turn (Qwen3's template writes `<think>\n\n</think>\n\n` after
 * the generation prompt when thinking is off; vLLM's prompt_is_reasoning_end). `turnEnd` is the
 * token that ends a turn in the template (the EOS text, e.g. "<|im_end|>"): only the prompt after
 * the last one is the current turn.
 */
export function reasoningApplies(input: {
  templateSource: string;
  promptText: string;
  turnEnd: string | null;
  enableThinking?: unknown;
}): boolean {
  if (!input.templateSource.includes(THINK_END)) return false;
  if (input.enableThinking === false) return false;
  const turnStart = input.turnEnd ? input.promptText.lastIndexOf(input.turnEnd) : -1;
  const turn = turnStart >= 0 ? input.promptText.slice(turnStart + input.turnEnd!.length) : input.promptText;
  // Closed when a </think> follows the turn's last <think> (or there is a </think> and no <think>).
  const end = turn.lastIndexOf(THINK_END);
  return end < 0 || end < turn.lastIndexOf(THINK_START);
}
