/**
 * Tool calls forced by tool_choice, whose output a JSON-schema grammar shaped
 * (structured/tool-choice-schemas.ts), turned into tool_calls as vLLM does (docs/reference/vllm-chat.md §6):
 * - a named function: the whole output is that call's arguments, as written. Non-streamed:
 *   content "" and one call. Streamed: a first delta with index 0, id, type and name (and the text
 *   so far), then the text as argument pieces; a call is sent at the end even for empty output.
 * - "required": the output is a JSON array of {"name", "parameters"}; each becomes a call with
 *   arguments = json.dumps(parameters). Non-streamed: content "", and no calls when the output is
 *   not such an array (cut short by max_tokens). Streamed: each call's first delta once its name
 *   is complete, then its re-dumped parameters in pieces; as with Hermes, calls already sent stand
 *   if the array turns out broken. Mistral's `[TOOL_CALLS] [...]` array (tool-calls-mistral.ts)
 *   streams through the same reader, with "arguments" for "parameters".
 *
 * Not here: the grammars (structured/), auto tool calls (tool-calls-hermes.ts, tool-calls-mistral.ts).
 */
import type { OutputDelta, ToolCall, ToolCallDelta } from './output-parser';
import { CallDeltaStream, StepOutput } from './tool-calls-deltas';
import { CallObjectReader, callFromObject, makeToolCallId } from './tool-calls-object';
import { JsonEventReader, JsonSyntaxError } from './tool-calls-json';
import { loads } from './tool-calls-json-values';

export interface ForcedCallsResult {
  content: string;
  toolCalls: ToolCall[];
}

/** A named tool choice: the output is the arguments. */
export function namedToolCall(text: string, name: string, newId: () => string = makeToolCallId): ForcedCallsResult {
  return { content: '', toolCalls: [{ id: newId(), type: 'function', function: { name, arguments: text } }] };
}

/** tool_choice "required": the calls of the output's array, or none when it is not one. */
export function requiredToolCalls(text: string, parallelToolCalls: boolean, newId: () => string = makeToolCallId): ForcedCallsResult {
  let calls: ToolCall[] = [];
  try {
    const value = loads(text);
    if (value.kind === 'array') {
      const parsed = value.items.map((item) => callFromObject(item, 'parameters', ''));
      if (parsed.every((c): c is ToolCall => c !== null)) calls = parsed;
    }
  } catch (e) {
    if (!(e instanceof JsonSyntaxError)) throw e;
  }
  if (!parallelToolCalls) calls = calls.slice(0, 1);
  for (const call of calls) call.id = newId();
  return { content: '', toolCalls: calls };
}

/** The streamed form of namedToolCall. */
export class NamedToolCallStream {
  private sent = false;

  constructor(
    private readonly name: string,
    private readonly newId: () => string = makeToolCallId,
  ) {}

  get calledTools(): boolean {
    return this.sent;
  }

  push(text: string): OutputDelta | null {
    if (!text) return null;
    return { toolCalls: [this.delta(text)] };
  }

  finish(): OutputDelta | null {
    return this.sent ? null : { toolCalls: [this.delta('')] };
  }

  private delta(text: string): ToolCallDelta {
    if (this.sent) return { index: 0, function: { arguments: text } };
    this.sent = true;
    return { index: 0, id: this.newId(), type: 'function', function: text ? { name: this.name, arguments: text } : { name: this.name } };
  }
}

/** How the call objects of an array are written: the arguments' key, and whether it may be missing (then `{}`). */
export interface CallArrayShape {
  argumentsKey: string;
  argumentsOptional: boolean;
}

const REQUIRED_SHAPE: CallArrayShape = { argumentsKey: 'parameters', argumentsOptional: false };

/** The streamed form of requiredToolCalls (and of any array of call objects, by `shape`). */
export class RequiredToolCallsStream {
  private readonly reader: JsonEventReader;
  private depth = 0;
  private call: CallObjectReader | null = null;
  private readonly out = new StepOutput();
  private readonly calls: CallDeltaStream;
  private stopped = false;
  /** The array was closed (what follows it is ignored). */
  private closed = false;
  /** parallel_tool_calls false stopped the reading at a second call. */
  private stoppedAtSecondCall = false;

  constructor(
    private readonly parallelToolCalls: boolean,
    newId: () => string = makeToolCallId,
    private readonly shape: CallArrayShape = REQUIRED_SHAPE,
  ) {
    this.calls = new CallDeltaStream(this.out, newId);
    // The reader calls its handler's methods with the handler as `this`; they reach the parser as `self`.
    // oxlint-disable-next-line typescript/no-this-alias
    const self = this;
    const notCalls = () => new JsonSyntaxError('the output is not an array of call objects');
    // depth 0: before the array; 1: inside it (items must be objects); 2+: inside a call.
    this.reader = new JsonEventReader({
      startArray() {
        if (self.depth === 0) return void (self.depth = 1);
        if (self.depth === 1) throw notCalls();
        self.call!.startArray();
        self.depth++;
      },
      endArray() {
        if (self.depth === 1) {
          self.depth = 0;
          self.closed = true;
          return;
        }
        self.depth--;
        self.call!.endArray();
      },
      startObject() {
        if (self.depth === 0) throw notCalls();
        if (self.depth === 1) self.startCall();
        self.call!.startObject();
        self.depth++;
      },
      endObject() {
        self.depth--;
        self.call!.endObject();
        if (self.depth === 1) self.endCall();
      },
      key: (k) => self.call!.key(k),
      stringStart() {
        if (self.depth <= 1) throw notCalls();
        self.call!.stringStart();
      },
      stringPiece: (t) => self.call!.stringPiece(t),
      stringEnd: () => self.call!.stringEnd(),
      scalar(t) {
        if (self.depth <= 1) throw notCalls();
        self.call!.scalar(t);
      },
    });
  }

  get calledTools(): boolean {
    return this.calls.anySent;
  }

  /** Reading stopped before the array was closed: it is not (or not only) an array of calls. */
  get broken(): boolean {
    return this.stopped && !this.closed && !this.stoppedAtSecondCall;
  }

  push(text: string): OutputDelta | null {
    if (!this.stopped && text) {
      try {
        this.reader.push(text);
      } catch (e) {
        if (!(e instanceof JsonSyntaxError)) throw e;
        this.stopped = true;
      }
    }
    return this.out.take();
  }

  finish(): OutputDelta | null {
    if (!this.stopped) {
      try {
        this.reader.end();
      } catch (e) {
        if (!(e instanceof JsonSyntaxError)) throw e;
      }
      this.stopped = true;
    }
    return this.out.take();
  }

  private startCall(): void {
    if (!this.parallelToolCalls && this.calls.begun > 0) {
      this.stopped = true;
      this.stoppedAtSecondCall = true;
      throw new JsonSyntaxError('one call only');
    }
    this.call = this.calls.begin(this.shape.argumentsKey, this.shape.argumentsOptional);
  }

  private endCall(): void {
    this.call = null;
    if (!this.calls.end()) {
      this.stopped = true;
      throw new JsonSyntaxError('not a call');
    }
  }
}
