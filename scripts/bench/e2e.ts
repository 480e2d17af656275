/**
 * `npm run bench` section `e2e`: chat completions end to end, as a client of the app sees them.
 * The built app (vite build into dist/) is served on 127.0.0.1 and opened in headless Chromium;
 * the first tab hosts the engine worker, and a page of the origin sends N concurrent streamed
 * requests (`fetch('/v1/chat/completions')`, through the Service Worker, the Comlink bridge, the
 * Hono app, the chat service and the generation engine, and back as SSE) for N = 1, 8, 32.
 *
 * Per level: time to first token (first SSE chunk carrying a token), request latency (send to the
 * end of the stream), per-stream decode rate after the first token, and aggregate throughput
 * (every completion token over the wall time of the level). Each stream decodes a fixed number of
 * tokens (ignore_eos) at temperature 0.7 with its own seed and question, so the batch stays full.
 * A warm-up round per level first loads the model and compiles the pipelines its steps use.
 *
 *   npm run bench -- --sections e2e --e2e-streams 1,8,32 --e2e-tokens 64 [--e2e-temperature 0] [--e2e-logprobs false]
 *
 * Not here: the engine-level figures without HTTP (generation.ts), tables of those (report.ts).
 */
import { startHearth } from '../../test/e2e/harness';

export interface E2eOptions {
  model: string;
  streams: number[];
  /** Tokens decoded per stream; default 16 on software adapters, 128 on GPUs. */
  tokens?: number;
  /**
   * The requests' `logprobs`: omitted by default (Hearth then still returns each chosen token's
   * logprob, as ART needs); `false` measures the path without them.
   */
  logprobs?: boolean;
  /** Sampling temperature (default 0.7, each stream with its own seed); 0 is greedy, unseeded. */
  temperature?: number;
}

export interface E2eLevel {
  streams: number;
  tokensPerStream: number;
  ttftMs: { p50: number; p95: number };
  latencyMs: { p50: number; p95: number };
  /** Median over streams of (tokens - 1) / (end - first token). */
  streamTokensPerSecond: number;
  /** Every completion token of the level over its wall time. */
  aggregateTokensPerSecond: number;
  wallMs: number;
}

export interface E2eBenchResult {
  model: string;
  device: string;
  levels: E2eLevel[];
}

export function e2eOptionsFromArgs(args: Record<string, string | boolean>): E2eOptions {
  const list = (k: string) => (typeof args[k] === 'string' ? args[k].split(',').map(Number) : undefined);
  return {
    model: typeof args['e2e-model'] === 'string' ? args['e2e-model'] : 'hearth/tiny-chat',
    streams: list('e2e-streams') ?? [1, 8, 32],
    tokens:
      typeof args['e2e-tokens'] === 'string' ? Number(args['e2e-tokens']) : args.full === true ? 128 : args.quick === true ? 16 : undefined,
    temperature: typeof args['e2e-temperature'] === 'string' ? Number(args['e2e-temperature']) : undefined,
    logprobs: args['e2e-logprobs'] === 'false' ? false : args['e2e-logprobs'] === 'true' ? true : undefined,
  };
}

interface StreamTiming {
  start: number;
  first: number;
  end: number;
  tokens: number;
}

function quantile(xs: number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))];
}

export async function runE2eBench(opts: E2eOptions, log: (line: string) => void): Promise<E2eBenchResult> {
  log('bench e2e: building the app (vite build)');
  const { build } = await import('vite');
  await build({ logLevel: 'silent' });
  const h = await startHearth();
  try {
    const status = await h.page.evaluate(
      async (key) => (await fetch('/v1/preview/engine', { headers: { Authorization: `Bearer ${key}` } })).json(),
      h.key,
    );
    const a = status?.gpu?.adapter ?? {};
    const device =
      [a.vendor, a.architecture, a.device, a.description].filter((x: string | undefined) => x).join(' / ') || 'unknown adapter';
    const software = /swiftshader/i.test(device);
    const tokens = opts.tokens ?? (software ? 16 : 128);
    const round = (streams: number, maxTokens: number) =>
      h.page.evaluate(
        // No named functions in here: tsx (esbuild keepNames) would wrap them in a `__name`
        // helper that does not exist in the page.
        async ({ key, model, streams, maxTokens, logprobs, temperature }) =>
          Promise.all(
            Array.from({ length: streams }, async (_, i) => {
              const start = performance.now();
              const res = await fetch('/v1/chat/completions', {
                method: 'POST',
                headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
                body: JSON.stringify({
                  model,
                  messages: [{ role: 'user', content: `What is ${i % 10} + ${(i * 7 + 3) % 10}?` }],
                  max_tokens: maxTokens,
                  ignore_eos: true,
                  temperature,
                  ...(temperature > 0 ? { seed: i } : {}),
                  stream: true,
                  stream_options: { include_usage: true },
                  ...(logprobs === undefined ? {} : { logprobs }),
                }),
              });
              if (!res.ok) throw new Error(`HTTP ${res.status}: ${await res.text()}`);
              const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
              let buffer = '';
              let first = -1;
              let count = 0;
              for (;;) {
                const { done, value } = await reader.read();
                if (done) break;
                buffer += value;
                for (let k = buffer.indexOf('\n\n'); k >= 0; k = buffer.indexOf('\n\n')) {
                  const event = buffer.slice(0, k);
                  buffer = buffer.slice(k + 2);
                  if (!event.startsWith('data: ') || event === 'data: [DONE]') continue;
                  const chunk = JSON.parse(event.slice(6));
                  if (chunk.error) throw new Error(chunk.error.message);
                  // A token's chunk carries its logprob (unless logprobs: false) or its text; a
                  // special token's text is empty, so the logprob is the surer sign.
                  if (first < 0 && chunk.choices?.some((c: any) => c.logprobs?.content?.length || c.delta?.content))
                    first = performance.now();
                  if (chunk.usage) count = chunk.usage.completion_tokens;
                }
              }
              return { start, first, end: performance.now(), tokens: count };
            }),
          ),
        { key: h.key, model: opts.model, streams, maxTokens, logprobs: opts.logprobs, temperature: opts.temperature ?? 0.7 },
      ) as Promise<StreamTiming[]>;

    // Warm-up at every level: WebGPU compiles a pipeline the first time a step shape occurs
    // (decode steps, steps mixing one request's prefill with others' decode), which on
    // SwiftShader stalls every stream for seconds.
    for (const streams of opts.streams) {
      log(`bench e2e: warm-up, ${streams} streams of 4 tokens, on ${device}`);
      await round(streams, 4);
    }
    const levels: E2eLevel[] = [];
    for (const streams of opts.streams) {
      log(`bench e2e: ${streams} concurrent streams of ${tokens} tokens`);
      const t = await round(streams, tokens);
      const wallMs = Math.max(...t.map((x) => x.end)) - Math.min(...t.map((x) => x.start));
      const ttft = t.map((x) => x.first - x.start);
      const latency = t.map((x) => x.end - x.start);
      const rate = t.map((x) => (x.tokens - 1) / ((x.end - x.first) / 1000));
      levels.push({
        streams,
        tokensPerStream: tokens,
        ttftMs: { p50: quantile(ttft, 0.5), p95: quantile(ttft, 0.95) },
        latencyMs: { p50: quantile(latency, 0.5), p95: quantile(latency, 0.95) },
        streamTokensPerSecond: quantile(rate, 0.5),
        aggregateTokensPerSecond: t.reduce((s, x) => s + x.tokens, 0) / (wallMs / 1000),
        wallMs,
      });
    }
    return { model: opts.model, device, levels };
  } finally {
    await h.close();
  }
}

export function e2eTable(result: E2eBenchResult): string {
  const head = [
    'model',
    'streams',
    'tokens / stream',
    'TTFT ms p50 / p95',
    'latency ms p50 / p95',
    'tok/s per stream (p50)',
    'tok/s aggregate',
  ];
  const rows = result.levels.map((l) => [
    result.model,
    `${l.streams}`,
    `${l.tokensPerStream}`,
    `${l.ttftMs.p50.toFixed(0)} / ${l.ttftMs.p95.toFixed(0)}`,
    `${l.latencyMs.p50.toFixed(0)} / ${l.latencyMs.p95.toFixed(0)}`,
    l.streamTokensPerSecond.toFixed(1),
    l.aggregateTokensPerSecond.toFixed(1),
  ]);
  return [`| ${head.join(' | ')} |`, `|${head.map(() => '---').join('|')}|`, ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');
}
