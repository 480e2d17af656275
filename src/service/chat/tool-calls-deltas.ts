/**
 * Tool call deltas as the streaming parsers make them: a step's pieces merged into one delta per
 * call (mergeDeltas, stepDelta), the content and call pieces a step gathers (StepOutput), and the
 * deltas of calls read one after another from call objects (CallDeltaStream): a call's first
 * delta (index, id, type, name, and the arguments read before the name was known) goes out once
 * its name is read, then its argument pieces as they come; a call whose arguments came before
 * its name goes out whole when its object ends valid.
 *
 * Not here: reading a call object (tool-calls-object.ts), where calls sit in the output
 * (tool-calls-hermes.ts, tool-calls-mistral.ts, tool-calls-forced.ts).
 */
import type { OutputDelta, ToolCallDelta } from './output-parser';
import { CallObjectReader } from './tool-calls-object';

/** Tool call deltas of one step with one entry per call index: the first one's fields, argument pieces joined. */
export function mergeDeltas(deltas: readonly ToolCallDelta[]): ToolCallDelta[] {
  const out: ToolCallDelta[] = [];
  for (const d of deltas) {
    const same = out.find((o) => o.index === d.index);
    if (!same) {
      out.push(d.function ? { ...d, function: { ...d.function } } : { ...d });
      continue;
    }
    const args = (same.function?.arguments ?? '') + (d.function?.arguments ?? '');
    same.function = { ...same.function, ...(args ? { arguments: args } : {}) };
  }
  return out;
}

/** The delta of a step's content and tool call pieces, or null when it has neither. */
export function stepDelta(content: string, deltas: readonly ToolCallDelta[]): OutputDelta | null {
  const delta: OutputDelta = {};
  if (content) delta.content = content;
  if (deltas.length) delta.toolCalls = mergeDeltas(deltas);
  return delta.content !== undefined || delta.toolCalls ? delta : null;
}

/** What a streaming parser gathered in one step: content text and tool call delta pieces. */
export class StepOutput {
  content = '';
  deltas: ToolCallDelta[] = [];

  /** The step's delta (null when it has nothing), and a fresh start for the next step. */
  take(): OutputDelta | null {
    const delta = stepDelta(this.content, this.deltas);
    this.content = '';
    this.deltas = [];
    return delta;
  }
}

/** The deltas of calls read one after another, each from its call object (see the header). */
export class CallDeltaStream {
  /** Index of the call being read (= calls sent or being sent before it). */
  private index = -1;
  private sent = false;
  private held = '';
  private name: string | null = null;
  private call: CallObjectReader | null = null;
  private sentAny = false;

  constructor(
    private readonly out: StepOutput,
    private readonly newId: () => string,
  ) {}

  /** A call's first delta has gone out. */
  get anySent(): boolean {
    return this.sentAny;
  }

  /** Calls begun so far. */
  get begun(): number {
    return this.index + 1;
  }

  /** Starts the next call: the returned reader takes its object's JSON events. */
  begin(argumentsKey: string, argumentsOptional = false): CallObjectReader {
    this.index++;
    this.sent = false;
    this.held = '';
    this.name = null;
    const call = new CallObjectReader(
      argumentsKey,
      {
        name: (name) => {
          this.name = name;
          // Nothing left to stream: send at the end, once the call is known to be valid.
          if (!call.argumentsDone) this.send();
        },
        arguments: (piece) => this.addArguments(piece),
      },
      argumentsOptional,
    );
    this.call = call;
    return call;
  }

  /** The call's object ended: false when it is no call, else its first delta goes out (if it has not). */
  end(): boolean {
    const call = this.call!;
    this.call = null;
    if (!call.valid) return false;
    // A call without arguments (where they are optional) has `{}`, as the non-streamed parse says.
    if (!call.hasArguments) this.addArguments('{}');
    this.name = call.finalName;
    this.send();
    return true;
  }

  private addArguments(piece: string): void {
    if (this.sent) this.out.deltas.push({ index: this.index, function: { arguments: piece } });
    else this.held += piece;
  }

  /** Sends the call's first delta (name, and the arguments held until then). */
  private send(): void {
    if (this.sent || this.name === null) return;
    this.sent = true;
    this.sentAny = true;
    const fn: { name: string; arguments?: string } = { name: this.name };
    if (this.held) fn.arguments = this.held;
    this.out.deltas.push({ index: this.index, id: this.newId(), type: 'function', function: fn });
    this.held = '';
  }
}
