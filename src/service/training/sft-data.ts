/**
 * SFT training data: resolving `training_data_url` to bytes and checking every line.
 *
 * Hearth has no W&B artifact store; it resolves `data:` URLs and http(s) URLs (relative ones
 * against the app's origin) when the job is created, and keeps the bytes as an artifact of the
 * model, so the job does not depend on the URL later. The file is JSON Lines, one example per
 * line: `{"messages": [...], "tools"?: [...]}` with a non-empty `messages` whose last message is
 * the assistant's (ART's `train.jsonl`; docs/reference/art-compat.md §4).
 */
import { readCapped } from '../capped-read';
import { InvalidInputError } from '../errors';

export const MAX_TRAINING_DATA_BYTES = 64 * 1024 * 1024;
const ROLES = new Set(['system', 'developer', 'user', 'assistant', 'tool', 'function']);
const LOC = ['body', 'training_data_url'];

export interface SftExample {
  messages: Record<string, unknown>[];
  tools?: unknown[];
  loss_mask?: unknown;
}

export interface ResolvedData {
  fileName: string;
  bytes: Uint8Array;
}

function fileNameOf(url: URL): string {
  if (url.protocol === 'data:') return 'train.jsonl';
  return decodeURIComponent(url.pathname.split('/').pop() || 'train.jsonl');
}

/** Fetches the data behind `rawUrl` (until `signal` aborts); every failure is a 422 naming the field. */
export async function resolveTrainingData(
  rawUrl: string,
  baseUrl: string,
  fetchFn: typeof fetch,
  signal?: AbortSignal,
): Promise<ResolvedData> {
  let url: URL;
  try {
    url = new URL(rawUrl, baseUrl);
  } catch {
    throw new InvalidInputError(LOC, `training_data_url is not a URL: "${rawUrl}".`, rawUrl);
  }
  if (url.protocol === 'wandb-artifact:') {
    throw new InvalidInputError(
      LOC,
      'Hearth cannot resolve wandb-artifact URLs (it has no W&B artifact store). Pass the JSONL data as a data: URL or an http(s) URL.',
      rawUrl,
    );
  }
  if (!['data:', 'http:', 'https:'].includes(url.protocol)) {
    throw new InvalidInputError(LOC, `Unsupported training_data_url scheme "${url.protocol}": use data:, http: or https:.`, rawUrl);
  }
  let res: Response;
  try {
    res = await fetchFn(url.href, { signal });
  } catch (err) {
    throw new InvalidInputError(LOC, `The training data could not be fetched: ${(err as Error).message}`, rawUrl);
  }
  if (!res.ok) throw new InvalidInputError(LOC, `The training data could not be fetched: HTTP ${res.status}.`, rawUrl);
  const declared = res.headers.get('Content-Length');
  if (Number(declared ?? '0') > MAX_TRAINING_DATA_BYTES) throw tooLarge(rawUrl);
  // Without Content-Length (or with a false one) the cap holds while reading, not after.
  const bytes = res.body
    ? await readCapped(res.body, MAX_TRAINING_DATA_BYTES, declared === null ? undefined : Number(declared))
    : new Uint8Array(0);
  if (!bytes) throw tooLarge(rawUrl);
  return { fileName: fileNameOf(url), bytes };
}

function tooLarge(rawUrl: string): InvalidInputError {
  return new InvalidInputError(LOC, `The training data is larger than ${MAX_TRAINING_DATA_BYTES / 2 ** 20} MiB.`, rawUrl);
}

function lineError(line: number, message: string, input: unknown): InvalidInputError {
  return new InvalidInputError(LOC, `Training data line ${line}: ${message}`, input);
}

/** Parses and checks JSON Lines training data; blank lines are skipped. */
export function parseSftJsonl(bytes: Uint8Array): SftExample[] {
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new InvalidInputError(LOC, 'The training data is not UTF-8 text.', null);
  }
  const examples: SftExample[] = [];
  for (const [i, raw] of text.split('\n').entries()) {
    const line = raw.trim();
    if (!line) continue;
    const n = i + 1;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (err) {
      throw lineError(n, `not valid JSON (${(err as Error).message}).`, line.slice(0, 200));
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) throw lineError(n, 'must be a JSON object.', value);
    const ex = value as Record<string, unknown>;
    if (!Array.isArray(ex.messages) || ex.messages.length === 0) throw lineError(n, '"messages" must be a non-empty array.', ex.messages);
    for (const [j, m] of ex.messages.entries()) {
      if (typeof m !== 'object' || m === null || !ROLES.has((m as { role?: string }).role ?? '')) {
        throw lineError(n, `messages[${j}] must be an object with a role among ${[...ROLES].join(', ')}.`, m);
      }
      const content = (m as { content?: unknown }).content;
      if (content !== undefined && content !== null && typeof content !== 'string' && !Array.isArray(content)) {
        throw lineError(n, `messages[${j}].content must be a string, a list of parts, or null.`, content);
      }
    }
    if ((ex.messages[ex.messages.length - 1] as { role: string }).role !== 'assistant') {
      throw lineError(n, "the last message must be the assistant's (it is what SFT learns to produce).", ex.messages.at(-1));
    }
    if (ex.tools !== undefined && ex.tools !== null && !Array.isArray(ex.tools)) throw lineError(n, '"tools" must be an array.', ex.tools);
    examples.push({
      messages: ex.messages as Record<string, unknown>[],
      ...(Array.isArray(ex.tools) ? { tools: ex.tools } : {}),
      ...(ex.loss_mask !== undefined ? { loss_mask: ex.loss_mask } : {}),
    });
  }
  if (examples.length === 0) throw new InvalidInputError(LOC, 'The training data holds no examples.', null);
  return examples;
}
