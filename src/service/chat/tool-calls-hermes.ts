/**
 * The Hermes tool-call format (Qwen2.5, Qwen3, SmolLM templates): the model writes
 * `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`, possibly several times, the last
 * one possibly unclosed. Parsed as vLLM's hermes parser does (docs/reference/vllm-chat.md §6):
 * - calls: each tag's body (up to the first `</tool_call>`, or to the end) is json.loads'ed;
 *   `arguments` is re-dumped with json.dumps(ensure_ascii=False); ids "chatcmpl-tool-<hex>";
 * - content: the text before the first `<tool_call>`, or null when that is empty; text between
 *   and after calls is dropped;
 * - any body that is not a call (bad JSON, no string name, no arguments): no calls at all, and
 *   the whole output is content;
 * - parallel_tool_calls false keeps the first call.
 *
 * Streaming (HermesToolCallStream) gives the same result in deltas: content until the first tag
 * (a trailing partial tag held back), then per call a first delta with index, id, type and name
 * (and the arguments so far), then argument pieces as they become certain; a call written with
 * its arguments before its name goes out whole once its body ended valid. A body found invalid
 * before anything of a call was sent turns everything from the first tag on into content, as
 * the non-streamed parse does. One found invalid after a call was sent cannot be taken back: the
 * calls sent stand and the rest is dropped (vLLM streams such partial calls too), so a truncated
 * or malformed output may differ from its non-streamed form; so may a call object repeating its
 * "name" or "arguments" key.
 *
 * Not here: JSON itself (tool-calls-json.ts), reasoning (reasoning*.ts), the chat wiring
 * (tool-calls-output-parser.ts).
 * Reference: vLLM vllm/entrypoints/openai/tool_parsers/hermes_tool_parser.py.
 */
import type { OutputDelta, ToolCall } from './output-parser';
import { CallDeltaStream, StepOutput } from './tool-calls-deltas';
import { callFromObject, makeToolCallId } from './tool-calls-object';
import { JsonEventReader, JsonSyntaxError } from './tool-calls-json';
import { loads } from './tool-calls-json-values';

export const TOOL_CALL_START = '<tool_call>';
export const TOOL_CALL_END = '</tool_call>';

export interface ToolCallOptions {
  /** false: only the first call is kept (parallel_tool_calls). */
  parallelToolCalls: boolean;
  /** Id of each new call (default: vLLM's random ids). */
  newId?: () => string;
}

export interface ExtractedToolCalls {
  /** Text before the first call (null when empty); the whole output when no call was found. */
  content: string | null;
  toolCalls: ToolCall[];
}

/** The bodies of `<tool_call>(.*?)</tool_call>|<tool_call>(.*)`, left to right. */
function toolCallBodies(text: string): string[] {
  const bodies: string[] = [];
  let at = text.indexOf(TOOL_CALL_START);
  while (at >= 0) {
    const start = at + TOOL_CALL_START.length;
    const end = text.indexOf(TOOL_CALL_END, start);
    if (end < 0) {
      bodies.push(text.slice(start));
      break;
    }
    bodies.push(text.slice(start, end));
    at = text.indexOf(TOOL_CALL_START, end + TOOL_CALL_END.length);
  }
  return bodies;
}

/** vLLM's extract_tool_calls: the calls of a whole output, or all of it as content. */
export function extractHermesToolCalls(text: string, options: ToolCallOptions): ExtractedToolCalls {
  const first = text.indexOf(TOOL_CALL_START);
  if (first < 0) return { content: text, toolCalls: [] };
  const newId = options.newId ?? makeToolCallId;
  const calls: ToolCall[] = [];
  for (const body of toolCallBodies(text)) {
    let call: ToolCall | null = null;
    try {
      call = callFromObject(loads(body), 'arguments', '');
    } catch (e) {
      if (!(e instanceof JsonSyntaxError)) throw e;
    }
    if (!call) return { content: text, toolCalls: [] };
    calls.push(call);
  }
  const kept = options.parallelToolCalls ? calls : calls.slice(0, 1);
  for (const call of kept) call.id = newId();
  const content = text.slice(0, first);
  return { content: content === '' ? null : content, toolCalls: kept };
}

/** The longest suffix of `text` that is a proper prefix of `tag` (it may yet become the tag). */
export function partialTagSuffix(text: string, tag: string): number {
  for (let n = Math.min(tag.length - 1, text.length); n > 0; n--) if (text.endsWith(tag.slice(0, n))) return n;
  return 0;
}

type Mode = 'text' | 'body' | 'between' | 'raw' | 'ignore';

/** A streamed output's Hermes tool calls, delta by delta (see the header). */
export class HermesToolCallStream {
  private mode: Mode = 'text';
  /** Text not yet handled (a partial tag at the end). */
  private pending = '';
  /** Everything from the first <tool_call> on, for turning it back into content. */
  private raw = '';
  private reader: JsonEventReader | null = null;
  private readonly out = new StepOutput();
  private readonly calls: CallDeltaStream;

  constructor(private readonly options: ToolCallOptions) {
    this.calls = new CallDeltaStream(this.out, options.newId ?? makeToolCallId);
  }

  /** A tool call delta has been sent (the choice finishes with "tool_calls"). */
  get calledTools(): boolean {
    return this.calls.anySent;
  }

  push(text: string): OutputDelta | null {
    if (this.mode !== 'text' && this.mode !== 'raw') this.raw += text;
    this.pending += text;
    this.run(false);
    return this.out.take();
  }

  finish(): OutputDelta | null {
    this.run(true);
    if (this.mode === 'body') this.endBody();
    return this.out.take();
  }

  private run(atEnd: boolean): void {
    while (this.pending) {
      const before = this.pending;
      if (this.mode === 'raw') {
        this.out.content += this.pending;
        this.pending = '';
      } else if (this.mode === 'ignore') {
        this.pending = '';
      } else if (this.mode === 'text' || this.mode === 'between') {
        const at = this.pending.indexOf(TOOL_CALL_START);
        if (at >= 0) {
          if (this.mode === 'text') {
            this.out.content += this.pending.slice(0, at);
            this.raw = this.pending.slice(at);
          }
          this.pending = this.pending.slice(at + TOOL_CALL_START.length);
          this.startBody();
        } else {
          const keep = atEnd ? 0 : partialTagSuffix(this.pending, TOOL_CALL_START);
          if (this.mode === 'text') this.out.content += this.pending.slice(0, this.pending.length - keep);
          this.pending = this.pending.slice(this.pending.length - keep);
        }
      } else {
        // body: up to the first </tool_call>, a possible partial end tag held back.
        const at = this.pending.indexOf(TOOL_CALL_END);
        const cut = at >= 0 ? at : this.pending.length - (atEnd ? 0 : partialTagSuffix(this.pending, TOOL_CALL_END));
        this.feed(this.pending.slice(0, cut));
        if (at >= 0) {
          this.pending = this.pending.slice(at + TOOL_CALL_END.length);
          if (this.mode === 'body') this.endBody();
        } else {
          this.pending = this.pending.slice(cut);
        }
      }
      if (this.pending === before) break;
    }
  }

  private startBody(): void {
    this.mode = 'body';
    let started = false;
    const call = this.calls.begin('arguments');
    // Only an object can be a call: anything else fails at its first character.
    this.reader = new JsonEventReader({
      startObject: () => {
        if (!started) started = true;
        call.startObject();
      },
      endObject: () => call.endObject(),
      startArray: () => {
        if (!started) throw new JsonSyntaxError('a tool call is an object');
        call.startArray();
      },
      endArray: () => call.endArray(),
      key: (k) => call.key(k),
      stringStart: () => {
        if (!started) throw new JsonSyntaxError('a tool call is an object');
        call.stringStart();
      },
      stringPiece: (t) => call.stringPiece(t),
      stringEnd: () => call.stringEnd(),
      scalar: (t) => {
        if (!started) throw new JsonSyntaxError('a tool call is an object');
        call.scalar(t);
      },
    });
  }

  private feed(text: string): void {
    if (!text || this.mode !== 'body') return;
    try {
      this.reader!.push(text);
    } catch (e) {
      if (!(e instanceof JsonSyntaxError)) throw e;
      this.fail();
    }
  }

  /** The body ended (its end tag, or the end of the output). */
  private endBody(): void {
    try {
      this.reader!.end();
    } catch (e) {
      if (!(e instanceof JsonSyntaxError)) throw e;
      return this.fail();
    }
    if (!this.calls.end()) return this.fail();
    this.mode = this.options.parallelToolCalls ? 'between' : 'ignore';
  }

  /** Not a call: before anything was sent it all becomes content, after it the rest is dropped. */
  private fail(): void {
    if (this.calls.anySent) {
      this.mode = 'ignore';
      this.pending = '';
      return;
    }
    // Nothing was sent, so no call delta is gathered either.
    this.mode = 'raw';
    // Everything from the first tag on (what is pending included) is content now.
    this.out.content += this.raw;
    this.raw = '';
    this.pending = '';
  }
}
