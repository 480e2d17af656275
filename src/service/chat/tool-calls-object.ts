/**
 * One tool call as a JSON object the model writes, read incrementally: `{"name": ..., "<args>":
 * ...}` with `<args>` = "arguments" (Hermes tags, Mistral's `[TOOL_CALLS] [...]`) or "parameters"
 * (tool_choice "required"); Mistral's parser reads a missing "arguments" as `{}`. It
 * reports the name once its string is complete and the re-dumped argument text piece by piece
 * (tool-calls-json.ts), and at the end says whether the object was a valid call (a string name,
 * the arguments key present), as vLLM's `function_call["name"]` / `["arguments"]` lookups would.
 * Other keys are read and ignored.
 *
 * Also here: tool call ids as vLLM makes them ("chatcmpl-tool-" + 32 hex digits).
 *
 * Not here: where the object sits in the output (tool-calls-hermes.ts, tool-calls-mistral.ts,
 * tool-calls-forced.ts), the deltas a streamed call becomes (tool-calls-deltas.ts).
 */
import type { ToolCall } from './output-parser';
import type { JsonEvents } from './tool-calls-json';
import { CanonicalWriter, dumps, type PyValue } from './tool-calls-json-values';

/** vLLM's make_tool_call_id: "chatcmpl-tool-" + a random uuid4 in hex. */
export function makeToolCallId(): string {
  return `chatcmpl-tool-${crypto.randomUUID().replace(/-/g, '')}`;
}

export interface CallObjectListener {
  /** The first "name" string value, once complete. */
  name(name: string): void;
  /** The next piece of the re-dumped arguments value. */
  arguments(piece: string): void;
}

/**
 * JSON events of one call object (depth 0 = the object itself). Feed it the events from its
 * startObject to its endObject; then `valid` tells whether it is a call.
 */
export class CallObjectReader implements JsonEvents {
  private depth = 0;
  /** Which top-level key the current value belongs to. */
  private current: 'name' | 'arguments' | 'other' | null = null;
  private nameText: string | null = null;
  private nameIsString = false;
  private nameSent = false;
  private sawArguments = false;
  private writer: CanonicalWriter | null = null;
  private started = false;

  constructor(
    private readonly argumentsKey: string,
    private readonly listener: CallObjectListener,
    /** A call without the arguments key is valid (its arguments are `{}`). */
    private readonly argumentsOptional = false,
  ) {}

  /** The object was closed with a string name and an arguments key (unless it is optional). */
  get valid(): boolean {
    return this.started && this.depth === 0 && this.nameIsString && (this.sawArguments || this.argumentsOptional);
  }

  /** The arguments key was present. */
  get hasArguments(): boolean {
    return this.sawArguments;
  }

  /**
   * The arguments value has been read completely (it came before the name): sending the call
   * early would stream nothing, so callers wait for the body's end and send only a valid call.
   */
  get argumentsDone(): boolean {
    return this.sawArguments && this.current !== 'arguments';
  }

  get finalName(): string | null {
    return this.nameIsString ? this.nameText : null;
  }

  private forward(f: (w: CanonicalWriter) => void): void {
    if (this.current === 'arguments' && this.writer) {
      f(this.writer);
      const piece = this.writer.take();
      if (piece) this.listener.arguments(piece);
    }
  }

  /** A value at depth 1 ended: the key it belonged to is done. */
  private valueEnded(): void {
    if (this.depth === 1) {
      if (this.current === 'arguments') this.writer = null;
      this.current = null;
    }
  }

  startObject(): void {
    if (this.depth === 0) this.started = true;
    else this.forward((w) => w.startObject());
    this.depth++;
  }

  endObject(): void {
    this.depth--;
    if (this.depth > 0) {
      this.forward((w) => w.endObject());
      this.valueEnded();
    }
  }

  startArray(): void {
    this.forward((w) => w.startArray());
    this.depth++;
  }

  endArray(): void {
    this.depth--;
    this.forward((w) => w.endArray());
    this.valueEnded();
  }

  key(name: string): void {
    if (this.depth === 1) {
      this.current = name === 'name' ? 'name' : name === this.argumentsKey ? 'arguments' : 'other';
      if (this.current === 'name') {
        this.nameText = '';
        this.nameIsString = false;
      }
      if (this.current === 'arguments') {
        this.sawArguments = true;
        this.writer = new CanonicalWriter();
      }
    } else {
      this.forward((w) => w.key(name));
    }
  }

  stringStart(): void {
    if (this.depth === 1 && this.current === 'name') this.nameText = '';
    this.forward((w) => w.stringStart());
  }

  stringPiece(text: string): void {
    if (this.depth === 1 && this.current === 'name') this.nameText += text;
    this.forward((w) => w.stringPiece(text));
  }

  stringEnd(): void {
    if (this.depth === 1 && this.current === 'name') {
      this.nameIsString = true;
      if (!this.nameSent) {
        this.nameSent = true;
        this.listener.name(this.nameText!);
      }
    }
    this.forward((w) => w.stringEnd());
    this.valueEnded();
  }

  scalar(text: string): void {
    if (this.depth === 1 && this.current === 'name') this.nameIsString = false;
    this.forward((w) => w.scalar(text));
    this.valueEnded();
  }
}

/** The arguments of a call that has none, where they are optional (Mistral: `tool_call.get("arguments", {})`). */
export const EMPTY_ARGUMENTS: PyValue = { kind: 'object', entries: new Map() };

/** A parsed call object as vLLM reads it, or null when it is not one; `defaultArguments` stands in for a missing arguments key. */
export function callFromObject(value: PyValue, argumentsKey: string, id: string, defaultArguments?: PyValue): ToolCall | null {
  if (value.kind !== 'object') return null;
  const name = value.entries.get('name');
  const args = value.entries.get(argumentsKey) ?? defaultArguments;
  if (!name || name.kind !== 'string' || !args) return null;
  return { id, type: 'function', function: { name: name.value, arguments: dumps(args) } };
}
