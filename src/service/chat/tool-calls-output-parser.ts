/**
 * The chat output parser (output-parser.ts's OutputParser) for one request: reasoning first,
 * then tool calls in the content after it (vLLM: "tools are parsed from the post-reasoning
 * content only"), then include_reasoning. The streamed deltas of a choice join to its
 * non-streamed message (see the stream caveats of tool-calls-hermes.ts / tool-calls-forced.ts).
 *
 * Which parts apply is the request's and the model's (chatOutputOptions):
 * - reasoning: the template thinks, enable_thinking is not false, the prompt left the block open
 *   (reasoning-parser.ts reasoningApplies);
 * - tools: "auto" with tools -> the template's format: Mistral's `[TOOL_CALLS]` when the template
 *   writes that token (its v11 form when the vocabulary has `[ARGS]`, as vLLM tells the two
 *   apart), Hermes `<tool_call>` tags otherwise; a named function or "required" -> the forced
 *   forms, whose output the grammar shaped; otherwise none.
 * - with a Mistral template, every tool call id is Mistral's 9-character form (its templates
 *   refuse others when the calls come back), and auto tool parsing keeps special tokens in the
 *   text (vLLM's mistral adjust_request: `[TOOL_CALLS]` is a special token).
 *
 * Not here: the parsers (reasoning-parser.ts, tool-calls-hermes.ts, tool-calls-mistral.ts, tool-calls-forced.ts), the
 * finish reason (the chat run: "tool_calls" once calls were parsed, docs/reference/vllm-chat.md §5).
 */
import type { OutputDelta, OutputParser, ParsedOutput, StreamingOutputParser, ToolCall } from './output-parser';
import { ReasoningStream, reasoningApplies, splitReasoning } from './reasoning-parser';
import type { ChatRequest } from './request';
import { NamedToolCallStream, RequiredToolCallsStream, namedToolCall, requiredToolCalls } from './tool-calls-forced';
import { HermesToolCallStream, extractHermesToolCalls } from './tool-calls-hermes';
import {
  MISTRAL_ARGS,
  MISTRAL_TOOL_CALLS,
  MistralToolCallStream,
  extractMistralToolCalls,
  makeMistralToolCallId,
} from './tool-calls-mistral';
import { mergeDeltas } from './tool-calls-deltas';
import { makeToolCallId } from './tool-calls-object';

/** How a model writes tool calls unprompted: Hermes tags, or Mistral's `[TOOL_CALLS]` before / from v11. */
export type AutoToolFormat = 'hermes' | 'mistral' | 'mistral-v11';

export type ToolParsing =
  | { kind: 'none' }
  | { kind: 'auto'; parallel: boolean; format: AutoToolFormat }
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
  /** The parser reads special tokens: the choice's text keeps them (skip_special_tokens false). */
  keepSpecialTokens?: boolean;
}

export interface OutputModel {
  templateSource: string;
  promptText: string;
  turnEnd: string | null;
  /** Whether the tokenizer's vocabulary has this token (Mistral's v11 `[ARGS]`). */
  hasToken?: (token: string) => boolean;
}

/** The options a request asks for on a model whose template is `templateSource`. */
export function chatOutputOptions(
  req: Pick<ChatRequest, 'tools' | 'tool_choice' | 'parallel_tool_calls' | 'include_reasoning' | 'chat_template_kwargs'>,
  model: OutputModel,
): ChatOutputOptions {
  const parallel = req.parallel_tool_calls !== false;
  const tc = req.tool_choice;
  const hasTools = (req.tools?.length ?? 0) > 0;
  const mistral = model.templateSource.includes(MISTRAL_TOOL_CALLS);
  const format: AutoToolFormat = !mistral ? 'hermes' : model.hasToken?.(MISTRAL_ARGS) ? 'mistral-v11' : 'mistral';
  let tools: ToolParsing = { kind: 'none' };
  if (hasTools && (tc === undefined || tc === null || tc === 'auto')) tools = { kind: 'auto', parallel, format };
  else if (hasTools && tc === 'required') tools = { kind: 'required', parallel };
  else if (typeof tc === 'object' && tc !== null && typeof (tc as { function?: { name?: unknown } }).function?.name === 'string') {
    tools = { kind: 'named', name: (tc as { function: { name: string } }).function.name };
  }
  const options: ChatOutputOptions = {
    reasoning: reasoningApplies({ ...model, enableThinking: req.chat_template_kwargs?.enable_thinking }),
    includeReasoning: req.include_reasoning !== false,
    tools,
  };
  if (mistral) options.newToolCallId = makeMistralToolCallId;
  if (tools.kind === 'auto' && mistral) options.keepSpecialTokens = true;
  return options;
}

/**
 * The request as the run plans it under these options (vLLM's tool parser adjust_request): a
 * parser that reads special tokens turns skip_special_tokens off.
 */
export function adjustRequest<R extends Pick<ChatRequest, 'skip_special_tokens'>>(req: R, options: ChatOutputOptions): R {
  return options.keepSpecialTokens ? { ...req, skip_special_tokens: false } : req;
}

/** The auto parser of a format, whole and streamed. */
function autoToolCalls(t: Extract<ToolParsing, { kind: 'auto' }>, newId: () => string) {
  if (t.format === 'hermes') {
    const options = { parallelToolCalls: t.parallel, newId };
    return { extract: (text: string) => extractHermesToolCalls(text, options), stream: () => new HermesToolCallStream(options) };
  }
  const options = { format: t.format === 'mistral' ? ('array' as const) : ('named' as const), parallelToolCalls: t.parallel, newId };
  return { extract: (text: string) => extractMistralToolCalls(text, options), stream: () => new MistralToolCallStream(options) };
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
      if (t.kind === 'auto' && content !== null) ({ content, toolCalls } = autoToolCalls(t, newId).extract(content));
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
        ? autoToolCalls(t, newId).stream()
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
