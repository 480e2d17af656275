/**
 * Reading a `text/event-stream` response body in the UI: the `data` of each event, parsed by
 * eventsource-parser as the SSE specification says (one optional space after the colon, CR, LF
 * and CRLF line ends, multi-line data joined with LF, comments and other fields ignored).
 * Cancelling the iteration cancels the body, which ends the stream on the server's side too.
 *
 * Not here: what the events mean (chat-client.ts, engine-feed.ts).
 * Reference: https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation
 */
import { EventSourceParserStream } from 'eventsource-parser/stream';

/** The data of each event in `body`; events with empty data are skipped (nothing sends them). */
export async function* sseData(body: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  // TextDecoderStream's writable side is typed for any BufferSource; a byte stream is one.
  const decoder = new TextDecoderStream() as unknown as ReadableWritablePair<string, Uint8Array>;
  const reader = body.pipeThrough(decoder).pipeThrough(new EventSourceParserStream()).getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      if (value.data) yield value.data;
    }
  } finally {
    reader.cancel().catch(() => undefined);
  }
}
