/**
 * Stop strings over a choice's growing text, as vLLM's detokenizer applies them: each new piece
 * of text is searched (only where a match can involve the new characters) for each stop string
 * in the request's order; the first found ends the choice and the text is cut at the start of
 * the match, or after it with `include_stop_str_in_output`. While streaming, the last
 * `max(len(stop)) - 1` characters are held back until they can no longer begin a stop string
 * (vLLM's `output_text_buffer_length`; none with include_stop_str_in_output).
 *
 * Not here: when stop strings are checked at all (ChoiceOutput: only once the output is longer
 * than min_tokens), stop token ids (the engine's).
 * Reference: docs/reference/vllm-chat.md §3.2; vLLM `check_stop_strings`, `get_next_output_text`.
 */

export class StopStrings {
  private out = '';
  private released = 0;
  private readonly holdBack: number;

  constructor(
    private readonly stops: readonly string[],
    private readonly includeInOutput: boolean,
  ) {
    this.holdBack = stops.length && !includeInOutput ? Math.max(...stops.map((s) => s.length)) - 1 : 0;
  }

  /** The text so far, cut at a matched stop string. */
  get text(): string {
    return this.out;
  }

  /**
   * Adds decoded text. With `check`, returns the stop string that now ends the output (the
   * text is cut accordingly), else null.
   */
  append(piece: string, check: boolean): string | null {
    if (piece.length === 0) return null;
    this.out += piece;
    if (!check) return null;
    for (const stop of this.stops) {
      const from = Math.max(0, this.out.length - piece.length - stop.length + 1);
      const at = this.out.indexOf(stop, from);
      if (at < 0) continue;
      const cut = this.includeInOutput ? at + stop.length : at;
      this.out = this.out.slice(0, cut);
      return stop;
    }
    return null;
  }

  /** Text not yet released that can be released now; everything once `finished`. */
  release(finished: boolean): string {
    const end = finished ? this.out.length : Math.max(this.released, this.out.length - this.holdBack);
    const piece = this.out.slice(this.released, end);
    this.released = end;
    return piece;
  }
}
