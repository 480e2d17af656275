// Shared by the output-parser tests (test/unit/chat/tool-calls*, reasoning*): feeding an output to
// a streaming parser in random pieces, and folding its deltas into the message a client
// accumulates (content and reasoning joined, tool calls gathered by index: id, type and name from
// their first delta, argument pieces joined), to compare with the non-streamed parse.
import type { OutputDelta, ParsedOutput, StreamingOutputParser, ToolCall } from '../../../src/service/chat/output-parser';
import { rng } from './decode-helpers';

export interface Folded {
  content: string | null;
  reasoning: string | null;
  toolCalls: ToolCall[];
  deltas: OutputDelta[];
}

/** Splits text into pieces of 1..maxPiece code points (seeded); seed 0: one piece. */
export function pieces(text: string, seed: number, maxPiece = 7): string[] {
  if (seed === 0) return [text];
  const random = rng(seed);
  const chars = Array.from(text); // code points
  const out: string[] = [];
  for (let i = 0; i < chars.length;) {
    const n = 1 + Math.floor(random() * maxPiece);
    out.push(chars.slice(i, i + n).join(''));
    i += n;
  }
  return out;
}

export function fold(parser: StreamingOutputParser, parts: readonly string[]): Folded {
  const deltas: OutputDelta[] = [];
  for (const part of parts) {
    const d = parser.push(part);
    if (d) deltas.push(d);
  }
  const last = parser.finish();
  if (last) deltas.push(last);
  let content: string | null = null;
  let reasoning: string | null = null;
  const calls = new Map<number, ToolCall>();
  for (const d of deltas) {
    if (d.content !== undefined) content = (content ?? '') + d.content;
    if (d.reasoning !== undefined) reasoning = (reasoning ?? '') + d.reasoning;
    for (const t of d.toolCalls ?? []) {
      let call = calls.get(t.index);
      if (!call) {
        if (!t.id || t.type !== 'function' || t.function?.name === undefined)
          throw new Error(`first delta of call ${t.index} lacks id/type/name: ${JSON.stringify(t)}`);
        call = { id: t.id, type: 'function', function: { name: t.function.name, arguments: '' } };
        calls.set(t.index, call);
      } else if (t.id !== undefined || t.function?.name !== undefined) {
        throw new Error(`a later delta of call ${t.index} repeats id/name: ${JSON.stringify(t)}`);
      }
      call.function.arguments += t.function?.arguments ?? '';
    }
  }
  const indices = [...calls.keys()];
  if (indices.some((i, k) => i !== k)) throw new Error(`tool call indices ${indices} are not 0, 1, ...`);
  return { content, reasoning, toolCalls: [...calls.values()], deltas };
}

/** The non-streamed message as a stream can express it ("" and null content read the same). */
export function asStreamed(m: ParsedOutput): { content: string; reasoning: string; toolCalls: ToolCall[] } {
  return { content: m.content ?? '', reasoning: m.reasoning ?? '', toolCalls: m.toolCalls };
}

export function foldedAsStreamed(f: Folded): { content: string; reasoning: string; toolCalls: ToolCall[] } {
  return { content: f.content ?? '', reasoning: f.reasoning ?? '', toolCalls: f.toolCalls };
}

/** Deterministic tool call ids. */
export function counterIds(): () => string {
  let n = 0;
  return () => `chatcmpl-tool-${(n++).toString(16).padStart(32, '0')}`;
}
