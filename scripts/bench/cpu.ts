/**
 * `npm run bench` section `cpu` (issue 25): one GGUF through Hearth's CPU backend (llama.cpp in
 * WebAssembly) and through its WebGPU engine on the adapter at hand, in one headless Chromium, and
 * the same GGUF in wllama used directly (no Hearth around it): prefill and decode tokens/s.
 *
 * The model is SmolLM2-135M's shape with `--cpu-layers` layers (default 4) and random bf16 weights,
 * with the bundled model's tokenizer (only the shapes matter: the requests decode a fixed number of
 * tokens with ignore_eos, greedy). It is served by a local mirror and added through
 * /v1/preview/base-models in two browser profiles: one on WebGPU (Automatic), one with the backend
 * choice "CPU" (PATCH /v1/preview/engine, then a reload restarts its engine). Hearth's figures are
 * a client's: a streamed /v1/chat/completions, prefill = prompt tokens / time to the first token,
 * decode = (tokens - 1) / (end - first token). wllama direct runs in the CPU profile's page with the
 * same prompt ids, threads and context, measured the same way (and llama.cpp's own timings).
 *
 *   npm run bench -- --sections cpu [--cpu-prompt 128] [--cpu-tokens 64] [--cpu-layers 4] [--cpu-runs 3]
 *
 * Not here: the other end-to-end figures (e2e.ts).
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Page } from 'playwright-core';
import { cpuGgufFromGguf, cpuGgufFromSafetensors, withTokenizer } from '../../src/engine/cpu/cpu-gguf';
import { readGguf } from '../../src/engine/model/gguf/gguf-reader';
import { parseModelConfig } from '../../src/engine/model/config/hf-config';
import type { LoadedModelFiles } from '../../src/engine/model/files/repo';
import { memoryBytes } from '../../src/engine/model/files/safetensors';
import { randomModelTensors } from '../../src/engine/reference/random-model';
import { tinyChatTokenizerMetadata } from '../../test/e2e/gguf-fixture';
import { api, openApp, startHearth } from '../../test/e2e/harness';
import { serveMirror, until, writeRangeHead } from '../../test/e2e/hf-mirror';
import { BENCH_SHAPES } from './bench-models';

export interface CpuBenchOptions {
  /** Digits in the user message (each with its space: about two tokens; the table gives the prompt's tokens). */
  promptTokens: number;
  tokens: number;
  layers: number;
  runs: number;
}

export interface CpuBenchRow {
  path: string;
  device: string;
  prefillTokensPerSecond: number;
  decodeTokensPerSecond: number;
}

export interface CpuBenchResult {
  model: string;
  promptTokens: number;
  tokens: number;
  rows: CpuBenchRow[];
}

export function cpuOptionsFromArgs(args: Record<string, string | boolean>): CpuBenchOptions {
  const n = (k: string, d: number) => (typeof args[k] === 'string' ? Number(args[k]) : d);
  return { promptTokens: n('cpu-prompt', 128), tokens: n('cpu-tokens', 64), layers: n('cpu-layers', 4), runs: n('cpu-runs', 3) };
}

const REPO = 'bench/smollm2-135m-GGUF';
const FILE = 'smollm2-135m-BF16.gguf';
const ID = `${REPO}/${FILE}`;

/** The bench model: SmolLM2-135M's shape, random bf16 weights, tiny-chat's tokenizer; and its CPU copy. */
async function benchGguf(layers: number): Promise<{ gguf: Buffer; cpu: Buffer }> {
  const config = parseModelConfig({ ...BENCH_SHAPES['smollm2-135m'], num_hidden_layers: layers, torch_dtype: 'bfloat16' });
  const tensors = randomModelTensors(config, 'bf16', 25);
  const files = {
    config,
    tensors: async function* () {
      yield* tensors;
    },
  } as unknown as LoadedModelFiles;
  const placeholder = new Uint8Array(await (await cpuGgufFromSafetensors(files, { eos: 2, bos: null })).arrayBuffer());
  const header = await readGguf(memoryBytes(placeholder));
  const gguf = new Uint8Array(await withTokenizer(new Blob([placeholder]), header, tinyChatTokenizerMetadata()).arrayBuffer());
  const cpu = new Uint8Array(
    await cpuGgufFromGguf(new Blob([gguf]), await readGguf(memoryBytes(gguf)), config.vocabSize, { eos: 2, bos: null }).arrayBuffer(),
  );
  return { gguf: Buffer.from(gguf), cpu: Buffer.from(cpu) };
}

interface Timing {
  prefill: number;
  decode: number;
}

/** One streamed chat completion through /v1, timed as a client sees it. */
function timeChat(page: Page, key: string, prompt: string, tokens: number): Promise<Timing & { promptTokens: number }> {
  return page.evaluate(
    // No named functions in here: tsx would wrap them in a `__name` helper the page lacks.
    async ({ key, model, prompt, tokens }) => {
      const start = performance.now();
      const res = await fetch('/v1/chat/completions', {
        method: 'POST',
        headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({
          model,
          messages: [{ role: 'user', content: prompt }],
          max_tokens: tokens,
          ignore_eos: true,
          temperature: 0,
          // Token ids mark the first token without asking for logprobs (which cost the CPU backend a sort per token).
          return_token_ids: true,
          stream: true,
          stream_options: { include_usage: true },
        }),
      });
      if (!res.ok) throw new Error(`HTTP ${res.status}: ${await res.text()}`);
      const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = '';
      let first = -1;
      let usage = { prompt_tokens: 0, completion_tokens: 0 };
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
          if (first < 0 && chunk.choices?.some((c: any) => c.token_ids?.length)) first = performance.now();
          if (chunk.usage) usage = chunk.usage;
        }
      }
      const end = performance.now();
      return {
        promptTokens: usage.prompt_tokens,
        prefill: usage.prompt_tokens / ((first - start) / 1000),
        decode: (usage.completion_tokens - 1) / ((end - first) / 1000),
      };
    },
    { key, model: ID, prompt, tokens },
  );
}

/**
 * The same prompt ids in wllama used directly (its module and wasm served from the app's origin).
 * The page code is a string: tsx would wrap its callbacks in a `__name` helper the page lacks.
 */
const WLLAMA_RUN = `async ({ ids, tokens, threads, nCtx }) => {
  const { Wllama } = await import('/__bench/wllama.js');
  let w = globalThis.__benchWllama;
  if (!w) {
    w = new Wllama({ default: location.origin + '/__bench/wllama.wasm' }, { suppressNativeLog: true });
    const blob = await (await fetch('/__bench/cpu.gguf')).blob();
    await w.loadModel([new File([blob], 'model.gguf')], { n_ctx: nCtx, n_threads: threads, n_gpu_layers: 0, n_parallel: 4, kv_unified: true });
    globalThis.__benchWllama = w;
  }
  const prompt = ids.map((id) => String.fromCodePoint(0x10000 + id)).join('');
  const start = performance.now();
  let first = -1;
  let last = null;
  await w.createCompletion({
    prompt, n_predict: tokens, ignore_eos: true, temperature: 0, cache_prompt: false, stream: true,
    onData: (chunk) => {
      if (first < 0 && chunk.choices?.[0]?.text) first = performance.now();
      last = chunk;
    },
  });
  const end = performance.now();
  const t = (last && last.timings) || {};
  return {
    prefill: ids.length / ((first - start) / 1000),
    decode: (tokens - 1) / ((end - first) / 1000),
    llamaCpp: { prefill: t.prompt_per_second ?? NaN, decode: t.predicted_per_second ?? NaN },
  };
}`;

function timeWllama(page: Page, ids: number[], tokens: number, threads: number, nCtx: number): Promise<Timing & { llamaCpp: Timing }> {
  return page.evaluate(`(${WLLAMA_RUN})(${JSON.stringify({ ids, tokens, threads, nCtx })})`);
}

/** The median (the mean of the middle two for an even count). */
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

export async function runCpuBench(opts: CpuBenchOptions, log: (line: string) => void): Promise<CpuBenchResult> {
  log('bench cpu: building the app (vite build)');
  const { build } = await import('vite');
  await build({ logLevel: 'silent' });
  log(`bench cpu: SmolLM2-135M shape, ${opts.layers} layers, bf16 GGUF`);
  const { gguf, cpu } = await benchGguf(opts.layers);
  const mirror = await serveMirror((req, res) => {
    if (!new URL(req.url ?? '/', 'http://x').pathname.endsWith(`/${FILE}`)) return void res.writeHead(404).end();
    const { start, end } = writeRangeHead(req, res, gguf.length);
    res.end(gguf.subarray(start, end));
  });
  const h = await startHearth();
  const wllamaDir = createRequire(import.meta.url)
    .resolve('@wllama/wllama/esm/index.js')
    .replace(/index\.js$/, '');
  h.server.files.set('/__bench/wllama.js', { body: readFileSync(wllamaDir + 'index.js'), type: 'text/javascript; charset=utf-8' });
  h.server.files.set('/__bench/wllama.wasm', { body: readFileSync(wllamaDir + 'wasm/wllama.wasm'), type: 'application/wasm' });
  h.server.files.set('/__bench/cpu.gguf', { body: cpu, type: 'application/octet-stream' });
  const prompt = Array.from({ length: opts.promptTokens }, (_, i) => `${i % 10}`).join(' ');
  const rows: CpuBenchRow[] = [];
  try {
    const add = async (page: Page, key: string) => {
      const res = await api(page, 'POST', '/v1/preview/base-models', {
        key,
        body: { source: { type: 'huggingface', repo: REPO, file: FILE, base_url: mirror.url } },
      });
      if (res.status !== 202) throw new Error(`adding the bench model: ${res.status} ${res.text}`);
      await until(
        'the bench model download',
        async () =>
          ((await api(page, 'GET', '/v1/preview/base-models', { key })).json.data as any[]).find((m) => m.id === ID)?.status === 'cached',
        async () => 'not cached',
        300_000,
      );
    };
    const measure = async (page: Page, key: string) => {
      log('bench cpu: measuring');
      await timeChat(page, key, `9 ${prompt}`, 4); // warm-up: loads the model (and converts or compiles)
      const runs = [];
      // Each run's prompt starts differently: no prefix cache (WebGPU's or llama.cpp's) serves its prefill.
      for (let i = 0; i < opts.runs; i++) runs.push(await timeChat(page, key, `${i} ${prompt}`, opts.tokens));
      log(`bench cpu: ${JSON.stringify(runs)}`);
      return { promptTokens: runs[0].promptTokens, prefill: median(runs.map((r) => r.prefill)), decode: median(runs.map((r) => r.decode)) };
    };
    const status = async (page: Page, key: string) => (await api(page, 'GET', '/v1/preview/engine', { key })).json;

    // WebGPU: the first profile, Automatic.
    await add(h.page, h.key);
    const gpuStatus = await status(h.page, h.key);
    const a = gpuStatus.gpu?.adapter ?? {};
    const adapter = [a.vendor, a.architecture, a.device, a.description].filter((x: string | undefined) => x).join(' / ') || 'no adapter';
    log(`bench cpu: Hearth on ${gpuStatus.backend?.description ?? 'no backend'}`);
    const webgpu = await measure(h.page, h.key);
    rows.push({
      path: 'Hearth /v1, WebGPU',
      device: adapter,
      prefillTokensPerSecond: webgpu.prefill,
      decodeTokensPerSecond: webgpu.decode,
    });

    // CPU: a second profile with the backend choice "CPU", its engine restarted by a reload.
    const context = await h.browser.newContext();
    let page = await openApp(context, h.server);
    const key = await page.evaluate(() => globalThis.hearth.adminKey());
    await api(page, 'PATCH', '/v1/preview/engine', { key, body: { backend: 'cpu' } });
    await page.close();
    page = await openApp(context, h.server);
    await add(page, key);
    const cpuStatus = await status(page, key);
    const description: string = cpuStatus.backend?.description ?? '';
    log(`bench cpu: Hearth on ${description}`);
    const threads = Number(/(\d+) threads?/.exec(description)?.[1] ?? 1);
    // Hearth's CPU backend and wllama used directly, run after run in turn, so a busy machine's
    // load falls on both alike; wllama gets Hearth's prompt ids, threads and context.
    await timeChat(page, key, `9 ${prompt}`, 4);
    const probe = await api(page, 'POST', '/v1/chat/completions', {
      key,
      body: { model: ID, messages: [{ role: 'user', content: prompt }], max_tokens: 1, return_token_ids: true },
    });
    const ids = probe.json.prompt_token_ids as number[];
    await timeWllama(page, ids, 4, threads, 4096);
    const viaHearth = [];
    const direct = [];
    for (let i = 0; i < opts.runs; i++) {
      viaHearth.push(await timeChat(page, key, `${i} ${prompt}`, opts.tokens));
      direct.push(await timeWllama(page, ids, opts.tokens, threads, 4096));
      log(`bench cpu: ${JSON.stringify({ hearth: viaHearth.at(-1), direct: direct.at(-1) })}`);
    }
    const hearthCpu = {
      promptTokens: viaHearth[0].promptTokens,
      prefill: median(viaHearth.map((r) => r.prefill)),
      decode: median(viaHearth.map((r) => r.decode)),
    };
    rows.push({
      path: 'Hearth /v1, CPU backend',
      device: description.replace(/^CPU: /, ''),
      prefillTokensPerSecond: hearthCpu.prefill,
      decodeTokensPerSecond: hearthCpu.decode,
    });
    const cpuDevice = `llama.cpp (WebAssembly), ${threads} thread${threads === 1 ? '' : 's'}`;
    rows.push({
      path: 'wllama directly',
      device: cpuDevice,
      prefillTokensPerSecond: median(direct.map((d) => d.prefill)),
      decodeTokensPerSecond: median(direct.map((d) => d.decode)),
    });
    rows.push({
      path: 'wllama, llama.cpp timings',
      device: cpuDevice,
      prefillTokensPerSecond: median(direct.map((d) => d.llamaCpp.prefill)),
      decodeTokensPerSecond: median(direct.map((d) => d.llamaCpp.decode)),
    });
    await context.close();
    return {
      model: `SmolLM2-135M shape, ${opts.layers} layers, bf16 GGUF`,
      promptTokens: hearthCpu.promptTokens,
      tokens: opts.tokens,
      rows,
    };
  } finally {
    await h.close();
    await mirror.close();
  }
}

export function cpuTable(r: CpuBenchResult): string {
  const f = (x: number) => (Number.isFinite(x) ? x.toFixed(1) : 'n/a');
  const lines = [
    `${r.model}; ${r.promptTokens} prompt tokens, ${r.tokens} decoded (greedy, ignore_eos)`,
    '',
    '| path | device | prefill tok/s | decode tok/s |',
    '| --- | --- | ---: | ---: |',
    ...r.rows.map((row) => `| ${row.path} | ${row.device} | ${f(row.prefillTokensPerSecond)} | ${f(row.decodeTokensPerSecond)} |`),
  ];
  return lines.join('\n');
}
