// The UI's SSE reader against the specification's parsing rules, on bodies split at awkward
// places: exactly one space after "data:" is dropped, CR, LF and CRLF all end lines, multi-line
// data is joined with LF, comments and other fields are ignored.
import { describe, expect, it } from 'vitest';
import { sseData } from '../../../src/ui/sse';

function body(...chunks: string[]): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  return new ReadableStream({
    start(controller) {
      for (const c of chunks) controller.enqueue(encoder.encode(c));
      controller.close();
    },
  });
}

async function all(stream: ReadableStream<Uint8Array>): Promise<string[]> {
  const out: string[] = [];
  for await (const data of sseData(stream)) out.push(data);
  return out;
}

describe('sseData', () => {
  it('drops one leading space, keeps the rest', async () => {
    expect(await all(body('data: {"a":1}\n\n', 'data:  two\n\n', 'data:none\n\n'))).toEqual(['{"a":1}', ' two', 'none']);
  });

  it('ends lines at CR, LF or CRLF, even when a chunk splits a CRLF or a field', async () => {
    expect(await all(body('data: one\r', '\n\r\nda', 'ta: two\r\rdata: three\n\n'))).toEqual(['one', 'two', 'three']);
  });

  it('joins multi-line data with LF and ignores comments, ids and event names', async () => {
    expect(await all(body(': keep-alive\n', 'event: status\nid: 7\ndata: a\ndata:  b\n\n', 'data: [DONE]\n\n'))).toEqual([
      'a\n b',
      '[DONE]',
    ]);
  });

  it('cancels the body when the reader stops early', async () => {
    let cancelled = false;
    const encoder = new TextEncoder();
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(encoder.encode('data: 1\n\ndata: 2\n\n'));
      },
      cancel() {
        cancelled = true;
      },
    });
    for await (const data of sseData(stream)) {
      expect(data).toBe('1');
      break;
    }
    await new Promise((r) => setTimeout(r, 0));
    expect(cancelled).toBe(true);
  });
});
