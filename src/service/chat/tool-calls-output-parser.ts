/**
 * The chat output parser (output-parser.ts's OutputParser) for one request: reasoning first,
 * then tool calls in the content after it (vLLM: "tools are parsed from the post-reasoning
 * content only"), then include_reasoning. The streamed deltas of a choice join to its
 * non-streamed message (see the stream caveats of tool-calls-hermes.ts / tool-calls-forced.ts).
 *
 * Which parts apply is the request's and the model's (chatOutputOptions):
 * - reasoning: the template thinks, enable_thinking is not false, the prompt left the block open
 *   (reasoning-parser.ts reasoningApplies);
 * - tools: "auto" with tools -> Hermes tags; a named function or "required" -> the forced forms,
 *   whose output the grammar shaped; otherwise none.
 *
 * Not here: the parsers (reasoning-parser.ts, tool-calls-hermes.ts, tool-calls-forced.ts), the
 * finish reason (the chat run: "tool_calls" once calls were parsed, vllm-chat.md §5).
 */
import type { OutputDelta, OutputParser, ParsedOutput, StreamingOutputParser, ToolCall } from './output-parser';
import { ReasoningStream, reasoningApplies, splitReasoning } from './reasoning-parser';
import type { ChatRequest } from './request';
import { NamedToolCallStream, RequiredToolCallsStream, namedToolCall, requiredToolCalls } from './tool-calls-forced';
import { HermesToolCallStream, extractHermesToolCalls } from './tool-calls-hermes';
import { makeToolCallId, mergeDeltas } from './tool-calls-object';

export type ToolParsing =
  | { kind: 'none' }
  | { kind: 'auto'; parallel: boolean }
  | { kind: 'named'; name: string }
  | { kind: 'required'; parallel: boolean };

export interface ChatOutputOptions {
  /** Split `<think>` reasoning from the content. */
  reasoning: boolean;
  /** false: reasoning is dropped from the message and the stream (include_reasoning). */
  includeReasoning: boolean;
  tools: ToolParsing;
  /** Tool call ids (default vLLM's random "chatcmpl-tool-<hex>"). */
  newToolCallId?: () => string;
}

/** The options a request asks for on a model whose template is `templateSource`. */
export function chatOutputOptions(
  req: Pick<ChatRequest, 'tools' | 'tool_choice' | 'parallel_tool_calls' | 'include_reasoning' | 'chat_template_kwargs'>,
  model: { templateSource: string; promptText: string; turnEnd: string | null },
): ChatOutputOptions {
  const parallel = req.parallel_tool_calls !== false;
  const tc = req.tool_choice;
  const hasTools = (req.tools?.length ?? 0) > 0;
  let tools: ToolParsing = { kind: 'none' };
  if (hasTools && (tc === undefined || tc === null || tc === 'auto')) tools = { kind: 'auto', parallel };
  else if (hasTools && tc === 'required') tools = { kind: 'required', parallel };
  else if (typeof tc === 'object' && tc !== null && typeof (tc as { function?: { name?: unknown } }).function?.name === 'string') {
    tools = { kind: 'named', name: (tc as { function: { name: string } }).function.name };
  }
  return {
    reasoning: reasoningApplies({ ...model, enableThinking: req.chat_template_kwargs?.enable_thinking }),
    includeReasoning: req.include_reasoning !== false,
    tools,
  };
}

export function chatOutputParser(options: ChatOutputOptions): OutputParser {
  const newId = options.newToolCallId ?? makeToolCallId;
  return {
    parse(text: string): ParsedOutput {
      let reasoning: string | null = null;
      let content: string | null = text;
      if (options.reasoning) ({ reasoning, content } = splitReasoning(text));
      let toolCalls: ToolCall[] = [];
      const t = options.tools;
      if (t.kind === 'auto' && content !== null)
        ({ content, toolCalls } = extractHermesToolCalls(content, { parallelToolCalls: t.parallel, newId }));
      else if (t.kind === 'named') ({ content, toolCalls } = namedToolCall(content ?? '', t.name, newId));
      else if (t.kind === 'required') ({ content, toolCalls } = requiredToolCalls(content ?? '', t.parallel, newId));
      return { content, reasoning: options.includeReasoning ? reasoning : null, toolCalls };
    },
    stream: () => new ChatOutputStream(options, newId),
  };
}

interface ToolStream {
  push(text: string): OutputDelta | null;
  finish(): OutputDelta | null;
  readonly calledTools: boolean;
}

const passContent: () => ToolStream = () => ({
  push: (text) => (text ? { content: text } : null),
  finish: () => null,
  calledTools: false,
});

class ChatOutputStream implements StreamingOutputParser {
  private readonly reasoning: ReasoningStream | null;
  private readonly tools: ToolStream;

  constructor(
    private readonly options: ChatOutputOptions,
    newId: () => string,
  ) {
    this.reasoning = options.reasoning ? new ReasoningStream() : null;
    const t = options.tools;
    this.tools =
      t.kind === 'auto'
        ? new HermesToolCallStream({ parallelToolCalls: t.parallel, newId })
        : t.kind === 'named'
          ? new NamedToolCallStream(t.name, newId)
          : t.kind === 'required'
            ? new RequiredToolCallsStream(t.parallel, newId)
            : passContent();
  }

  get calledTools(): boolean {
    return this.tools.calledTools;
  }

  push(text: string): OutputDelta | null {
    if (!this.reasoning) return this.tools.push(text);
    const split = this.reasoning.push(text);
    return this.combine(split?.reasoning, split?.content !== undefined ? this.tools.push(split.content) : null);
  }

  finish(): OutputDelta | null {
    const split = this.reasoning?.finish() ?? null;
    const fromContent = split?.content !== undefined ? this.tools.push(split.content) : null;
    const last = this.tools.finish();
    return this.combine(split?.reasoning, merge(fromContent, last));
  }

  private combine(reasoning: string | undefined, rest: OutputDelta | null): OutputDelta | null {
    const out: OutputDelta = { ...rest };
    if (reasoning && this.options.includeReasoning) out.reasoning = reasoning;
    return out.reasoning !== undefined || out.content !== undefined || out.toolCalls !== undefined ? out : null;
  }
}

/** Two deltas of one step as one (content joined, tool call deltas in order). */
function merge(a: OutputDelta | null, b: OutputDelta | null): OutputDelta | null {
  if (!a) return b;
  if (!b) return a;
  const out: OutputDelta = { ...a };
  if (b.content !== undefined) out.content = (a.content ?? '') + b.content;
  if (b.reasoning !== undefined) out.reasoning = (a.reasoning ?? '') + b.reasoning;
  if (b.toolCalls) out.toolCalls = mergeDeltas([...(a.toolCalls ?? []), ...b.toolCalls]);
  return out;
}
