/**
 * Mistral's tool-call format, parsed as vLLM's mistral tool parser does. The model writes the
 * `[TOOL_CALLS]` control token and then, depending on its tokenizer version (vLLM: v11+ when the
 * vocabulary has `[ARGS]`):
 * - before v11 ("array"): `[TOOL_CALLS] [{"name": ..., "arguments": {...}}, ...]`. Only the text
 *   up to a second `[TOOL_CALLS]` is read; it is stripped and its first JSON value taken
 *   (raw_decode: text after the array is ignored), falling back to the span from the first `[{`
 *   to the last `}]`. Each item needs a string "name"; its "arguments" (`{}` when missing) are
 *   re-dumped with json.dumps(ensure_ascii=False);
 * - v11 and later ("named"): `[TOOL_CALLS]name[ARGS]{...}`, repeated per call. Each piece after a
 *   `[TOOL_CALLS]` is a call when it holds a `{`: the name is the text before it (less `[ARGS]`),
 *   the arguments are the text from it on, as written (vLLM keeps even malformed arguments, so
 *   the model sees its own attempt in the next turn); a piece without `{` is skipped. Beyond
 *   vLLM: a `[CALL_ID]id` after the name (how mistral-common's v11+ templates write past calls,
 *   so a model may copy it) is not part of the name.
 * Content is the text before the first `[TOOL_CALLS]` (null when empty). parallel_tool_calls
 * false keeps the first call. Ids are Mistral's 9 alphanumeric characters (vLLM's MistralToolCall):
 * Mistral's chat templates refuse any other id when the calls come back in the next request.
 *
 * Deliberate difference: an array that cannot be read leaves the whole output as content (vLLM
 * keeps only the stripped text after the token), as the Hermes parser does.
 *
 * Streaming gives the same message in deltas: content up to the token (a partial token held
 * back); array calls stream as "required" calls do (tool-calls-forced.ts: a first delta once the
 * name is read, then the re-dumped arguments in pieces), and an array found unreadable before any
 * call went out is held and parsed whole at the end; named calls go out once their `{` arrives,
 * then their argument text as it comes. As with Hermes, calls already sent stand when the array
 * later turns out broken, so such an output may differ from its non-streamed form.
 *
 * `[TOOL_CALLS]` and `[ARGS]` are special tokens: the chat service keeps special tokens in the
 * text while this parser runs (vLLM's adjust_request sets skip_special_tokens false).
 *
 * Not here: JSON (tool-calls-json*.ts), the chat wiring and the choice of parser
 * (tool-calls-output-parser.ts).
 * Reference: vLLM vllm/tool_parsers/mistral_tool_parser.py (extract_tool_calls,
 * extract_tool_calls_streaming, MistralToolCall.generate_random_id).
 */
import type { OutputDelta, ToolCall } from './output-parser';
import { RequiredToolCallsStream } from './tool-calls-forced';
import { partialTagSuffix, type ExtractedToolCalls } from './tool-calls-hermes';
import { JsonSyntaxError } from './tool-calls-json';
import { loads, rawDecode, type PyValue } from './tool-calls-json-values';
import { StepOutput } from './tool-calls-deltas';
import { EMPTY_ARGUMENTS, callFromObject } from './tool-calls-object';

export const MISTRAL_TOOL_CALLS = '[TOOL_CALLS]';
export const MISTRAL_ARGS = '[ARGS]';
export const MISTRAL_CALL_ID = '[CALL_ID]';

/** "array": `[TOOL_CALLS] [{...}]` (tokenizers before v11); "named": `[TOOL_CALLS]name[ARGS]{...}`. */
export type MistralCallFormat = 'array' | 'named';

const ALPHANUMERIC = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** vLLM's MistralToolCall.generate_random_id: 9 random ASCII letters and digits. */
export function makeMistralToolCallId(): string {
  let id = '';
  while (id.length < 9) {
    for (const byte of crypto.getRandomValues(new Uint8Array(16))) {
      // 248 = 4 * 62: below it every character is equally likely.
      if (byte < 248 && id.length < 9) id += ALPHANUMERIC[byte % 62];
    }
  }
  return id;
}

export interface MistralToolCallOptions {
  format: MistralCallFormat;
  /** false: only the first call is kept (parallel_tool_calls). */
  parallelToolCalls: boolean;
  newId?: () => string;
}

/** The calls of an array value, or null when it is not an array of call objects. */
function arrayCalls(value: PyValue): ToolCall[] | null {
  if (value.kind !== 'array') return null;
  const calls = value.items.map((item) => callFromObject(item, 'arguments', '', EMPTY_ARGUMENTS));
  return calls.every((c): c is ToolCall => c !== null) ? calls : null;
}

/** The array after `[TOOL_CALLS]`: its first JSON value, else the `[{ ... }]` span; null when neither is calls. */
function readCallArray(text: string): ToolCall[] | null {
  const stripped = text.trim();
  try {
    return arrayCalls(rawDecode(stripped));
  } catch (e) {
    if (!(e instanceof JsonSyntaxError)) throw e;
  }
  // vLLM's fallback regex `\[{.*}\]` (greedy, DOTALL): from the first "[{" to the last "}]".
  const start = stripped.indexOf('[{');
  const end = stripped.lastIndexOf('}]');
  if (start < 0 || end < start) return null;
  try {
    return arrayCalls(loads(stripped.slice(start, end + 2)));
  } catch (e) {
    if (!(e instanceof JsonSyntaxError)) throw e;
    return null;
  }
}

/** The function name in the text before a v11 call's `{`: without `[ARGS]`, and without a `[CALL_ID]id`. */
function nameBefore(text: string): string {
  const name = text.replaceAll(MISTRAL_ARGS, '');
  const callId = name.indexOf(MISTRAL_CALL_ID);
  return callId >= 0 ? name.slice(0, callId) : name;
}

/** A v11 call piece (the text after one `[TOOL_CALLS]`), or null when it has no `{`. */
function namedCall(piece: string): ToolCall | null {
  const brace = piece.indexOf('{');
  if (brace < 0) return null;
  return {
    id: '',
    type: 'function',
    function: { name: nameBefore(piece.slice(0, brace)), arguments: piece.slice(brace) },
  };
}

/** vLLM's extract_tool_calls: the calls of a whole output, or all of it as content. */
export function extractMistralToolCalls(text: string, options: MistralToolCallOptions): ExtractedToolCalls {
  const parts = text.split(MISTRAL_TOOL_CALLS);
  if (parts.length === 1) return { content: text, toolCalls: [] };
  let calls: ToolCall[];
  if (options.format === 'named') {
    calls = parts.slice(1).flatMap((piece) => namedCall(piece) ?? []);
  } else {
    const read = readCallArray(parts[1]);
    if (!read) return { content: text, toolCalls: [] };
    calls = read;
  }
  if (!options.parallelToolCalls) calls = calls.slice(0, 1);
  const newId = options.newId ?? makeMistralToolCallId;
  for (const call of calls) call.id = newId();
  return { content: parts[0] === '' ? null : parts[0], toolCalls: calls };
}

type Mode = 'text' | 'array' | 'held' | 'name' | 'arguments' | 'ignore';

/** A streamed output's Mistral tool calls, delta by delta (see the header). */
export class MistralToolCallStream {
  private mode: Mode = 'text';
  /** Text not yet handled (a partial token at the end). */
  private pending = '';
  /** Everything from the first `[TOOL_CALLS]` on (array format), for a parse at the end. */
  private raw = '';
  private array: RequiredToolCallsStream | null = null;
  /** Named format: the call being read, and its name so far. */
  private index = -1;
  private name = '';
  private anySent = false;
  private readonly out = new StepOutput();
  private readonly newId: () => string;

  constructor(private readonly options: MistralToolCallOptions) {
    this.newId = options.newId ?? makeMistralToolCallId;
  }

  get calledTools(): boolean {
    return this.anySent || (this.array?.calledTools ?? false);
  }

  push(text: string): OutputDelta | null {
    if (this.mode === 'array') this.feedArray(text);
    else if (this.mode === 'held') this.raw += text;
    else if (this.mode !== 'ignore') {
      this.pending += text;
      this.run(false);
    }
    return this.out.take();
  }

  finish(): OutputDelta | null {
    if (this.mode === 'text' || this.mode === 'name' || this.mode === 'arguments') this.run(true);
    if (this.mode === 'array') {
      this.collect(this.array!.finish());
      if (this.array!.broken && !this.array!.calledTools) this.mode = 'held';
    }
    if (this.mode === 'held') this.finishHeld();
    return this.out.take();
  }

  private collect(delta: OutputDelta | null): void {
    if (delta?.toolCalls) this.out.deltas.push(...delta.toolCalls);
  }

  private run(atEnd: boolean): void {
    while (this.pending) {
      const at = this.pending.indexOf(MISTRAL_TOOL_CALLS);
      const keep = at >= 0 || atEnd ? 0 : partialTagSuffix(this.pending, MISTRAL_TOOL_CALLS);
      const upTo = at >= 0 ? at : this.pending.length - keep;
      const before = this.pending.slice(0, upTo);
      if (this.mode === 'text') this.out.content += before;
      else if (this.mode === 'arguments') {
        if (before) this.out.deltas.push({ index: this.index, function: { arguments: before } });
      } else if (this.mode === 'name') {
        this.name += before;
        this.startNamedCall();
      }
      if (at < 0) {
        this.pending = this.pending.slice(upTo);
        return;
      }
      const rest = this.pending.slice(at + MISTRAL_TOOL_CALLS.length);
      this.pending = '';
      if (this.options.format === 'array') {
        // Only the text up to a second [TOOL_CALLS] is read, so a later one never gets here.
        this.mode = 'array';
        this.array = new RequiredToolCallsStream(this.options.parallelToolCalls, this.newId, {
          argumentsKey: 'arguments',
          argumentsOptional: true,
        });
        this.raw = MISTRAL_TOOL_CALLS;
        this.feedArray(rest);
        return;
      }
      if (this.anySent && !this.options.parallelToolCalls) {
        this.mode = 'ignore';
        return;
      }
      // A piece that never reached its `{` is skipped, as the non-streamed parse skips it.
      this.mode = 'name';
      this.name = '';
      this.pending = rest;
    }
  }

  /** Named format: once the name text holds the `{` that starts the arguments, the call goes out. */
  private startNamedCall(): void {
    const brace = this.name.indexOf('{');
    if (brace < 0) return;
    this.index++;
    this.anySent = true;
    this.out.deltas.push({
      index: this.index,
      id: this.newId(),
      type: 'function',
      function: { name: nameBefore(this.name.slice(0, brace)), arguments: this.name.slice(brace) },
    });
    this.name = '';
    this.mode = 'arguments';
  }

  private feedArray(text: string): void {
    this.raw += text;
    this.collect(this.array!.push(text));
    if (this.array!.broken && !this.array!.calledTools) this.mode = 'held';
  }

  /** The array could not be streamed: the whole text from `[TOOL_CALLS]` on is parsed now. */
  private finishHeld(): void {
    const { toolCalls } = extractMistralToolCalls(this.raw, { ...this.options, newId: this.newId });
    if (toolCalls.length === 0) {
      this.out.content += this.raw;
    } else {
      this.anySent = true;
      toolCalls.forEach((call, index) => this.out.deltas.push({ index, id: call.id, type: 'function', function: { ...call.function } }));
    }
    this.raw = '';
    this.mode = 'ignore';
  }
}
