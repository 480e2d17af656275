/**
 * Logprobs in chat responses, as vLLM's `_create_chat_logprobs` writes them: one entry per
 * generated token `{token, logprob, bytes, top_logprobs: [{token, logprob, bytes}]}` with raw
 * logprobs floored at -9999, `bytes` the UTF-8 of the token decoded alone (U+FFFD for a partial
 * character), `top_logprobs` the first k of vLLM's {sampled token, top1..} order; and the
 * non-streaming `prompt_logprobs` list (null, then {"<id>": {logprob, rank, decoded_token}}).
 *
 * When logprobs are shown: `logprobs: true` shows them as vLLM does; `logprobs: false` hides
 * them (null); an omitted `logprobs` still shows the chosen tokens' logprobs with
 * `top_logprobs: []` and tokens written `token_id:<id>`, because the hosted service Hearth
 * stands in for forces logprobs on (OpenPipe ART's server does) and RL clients train on
 * them (docs/reference/art-compat.md §1.11). `return_tokens_as_token_ids: false` keeps decoded tokens there.
 *
 * Not here: computing logprobs (the engine's sampler returns them with every token).
 */
import type { PromptLogprob, SampledToken, TopLogprob } from '../../engine/generate/types';
import type { ModelTokenizer } from '../../engine/model/text/tokenizer';
import type { ChatRequest } from './request';

/** vLLM's floor for logprobs in responses (-inf is not JSON). */
export const LOGPROB_FLOOR = -9999;

export interface LogprobsMode {
  /** Alternatives shown per token, 0..20. */
  top: number;
  /** Tokens written as `token_id:<id>` instead of their decoded text. */
  asTokenIds: boolean;
}

/** How a request's response shows generated-token logprobs, or null when it shows none. */
export function logprobsMode(req: ChatRequest): LogprobsMode | null {
  if (req.logprobs === true) return { top: req.top_logprobs ?? 0, asTokenIds: req.return_tokens_as_token_ids === true };
  if (req.logprobs === false) return null;
  return { top: 0, asTokenIds: req.return_tokens_as_token_ids !== false };
}

/** Prompt logprobs asked for: `prompt_logprobs`, or with `echo` the `top_logprobs` (vLLM). */
export function promptLogprobsCount(req: ChatRequest): number | null {
  if (req.prompt_logprobs !== undefined) return req.prompt_logprobs;
  if (req.echo) return req.top_logprobs ?? 0;
  return null;
}

export interface TopLogprobEntry {
  token: string;
  logprob: number;
  bytes: number[] | null;
}

export interface LogprobEntry extends TopLogprobEntry {
  top_logprobs: TopLogprobEntry[];
}

const floor = (x: number) => Math.max(x, LOGPROB_FLOOR);

/** Writes token entries; decoded token strings are cached per id (one tokenizer decode each). */
export class LogprobsFormatter {
  private readonly texts = new Map<number, string>();
  private readonly encoder = new TextEncoder();

  constructor(
    private readonly tokenizer: ModelTokenizer,
    readonly mode: LogprobsMode,
  ) {}

  private text(id: number): string {
    let t = this.texts.get(id);
    if (t === undefined) {
      t = this.tokenizer.tokenText(id);
      this.texts.set(id, t);
    }
    return t;
  }

  private bytes(s: string): number[] {
    return [...this.encoder.encode(s)];
  }

  /** The display string of a token. */
  token(id: number): string {
    return this.mode.asTokenIds ? `token_id:${id}` : this.text(id);
  }

  /** One generated token: `bytes` are always of the decoded text; alternatives' of their `token` (vLLM). */
  entry(t: SampledToken): LogprobEntry {
    const top: TopLogprobEntry[] = [];
    for (const alt of t.topLogprobs.slice(0, this.mode.top)) {
      const token = this.token(alt.id);
      top.push({ token, logprob: floor(alt.logprob), bytes: this.bytes(token) });
    }
    return { token: this.token(t.id), logprob: floor(t.logprob), bytes: this.bytes(this.text(t.id)), top_logprobs: top };
  }

  entries(tokens: readonly SampledToken[]): LogprobEntry[] {
    return tokens.map((t) => this.entry(t));
  }
}

export interface PromptLogprobValue {
  logprob: number;
  rank: number;
  decoded_token: string;
}

/**
 * The response's `prompt_logprobs`: element 0 null, then per position the actual token (with
 * its rank) and the top `k` alternatives (ranks 1..k), keyed by token id. JSON objects list
 * integer keys in ascending order, where vLLM's dict keeps the actual token first.
 */
export function formatPromptLogprobs(
  tokenizer: ModelTokenizer,
  positions: readonly (PromptLogprob | null)[],
): (Record<string, PromptLogprobValue> | null)[] {
  const text = (id: number) => tokenizer.tokenText(id);
  return positions.map((p) => {
    if (!p) return null;
    const out: Record<string, PromptLogprobValue> = {};
    out[String(p.tokenId)] = { logprob: floor(p.logprob), rank: p.rank, decoded_token: text(p.tokenId) };
    p.top.forEach((alt: TopLogprob, i: number) => {
      if (!(String(alt.id) in out)) out[String(alt.id)] = { logprob: floor(alt.logprob), rank: i + 1, decoded_token: text(alt.id) };
    });
    return out;
  });
}
