/**
 * The output-parsing step between a choice's detokenised text (after stop strings) and the
 * response: what becomes `content`, `reasoning_content` / `reasoning` and `tool_calls`. The
 * chat pipeline calls `parse` on the whole text of a non-streamed choice, and feeds a fresh
 * `stream()` parser with the text deltas of a streamed choice (telling it when the choice ends),
 * so that the joined deltas of a stream equal the non-streamed message.
 *
 * This file holds the seam, the pass-through parser (all text is content) and the finish-reason
 * rule for parsed tool calls. The parser a request gets is built by tool-calls-output-parser.ts
 * (reasoning, then Hermes or forced tool calls) from the request and its rendered prompt.
 *
 * Reference: docs/reference/vllm-chat.md §4 (message and delta fields), §6 (tool calls), §7 (reasoning).
 */
export interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/** A streamed piece of one tool call (openai's ChoiceDeltaToolCall). */
export interface ToolCallDelta {
  index: number;
  id?: string;
  type?: 'function';
  function?: { name?: string; arguments?: string };
}

/** A non-streamed choice's message parts. */
export interface ParsedOutput {
  /** null when there is no content (e.g. only tool calls). */
  content: string | null;
  /** Text the model reasoned in, or null. */
  reasoning: string | null;
  toolCalls: ToolCall[];
}

/** One streamed delta's message parts; absent keys are not sent. */
export interface OutputDelta {
  content?: string;
  reasoning?: string;
  toolCalls?: ToolCallDelta[];
}

export interface StreamingOutputParser {
  /** New text of the choice; the delta to send now, or null to withhold it for now. */
  push(text: string): OutputDelta | null;
  /** The choice ended: whatever was withheld, or null. */
  finish(): OutputDelta | null;
  /** Tool calls were emitted (the finish reason becomes "tool_calls"). */
  readonly calledTools: boolean;
}

export interface OutputParser {
  parse(text: string): ParsedOutput;
  stream(): StreamingOutputParser;
}

/** Every character is content (vLLM without a reasoning or tool parser). */
export const passThroughParser: OutputParser = {
  parse: (text) => ({ content: text, reasoning: null, toolCalls: [] }),
  stream: () => ({
    push: (text) => ({ content: text }),
    finish: () => null,
    calledTools: false,
  }),
};

/**
 * A choice's finish reason once its output is parsed: "tool_calls" when it stopped (an end token,
 * a stop string, or its grammar completed) after tool calls were parsed, whatever the tool_choice
 * ("auto", "required" or a named function; vLLM v0.11 answers named calls with "stop" in one path
 * and "tool_calls" in another). A choice cut by max_tokens or aborted keeps "length" / "abort", so
 * a client can tell a truncated call from a finished one.
 */
export function parsedFinishReason<R extends string>(reason: R, calledTools: boolean): R | 'tool_calls' {
  return reason === 'stop' && calledTools ? 'tool_calls' : reason;
}
