/**
 * The peers section of `npm run bench` (issue 22): Hearth beside llama.cpp and PEFT on the same
 * GPU, in one run.
 *
 *   - Decode and prefill: the same GGUF files (peer-models.ts: random weights with the exact shapes
 *     of SmolLM2-135M, Qwen2.5-0.5B and Llama-3.2-1B in F16, Q8_0 and Q4_K_M) through Hearth's
 *     Engine (generation.ts's measurements: prefill of a P-token prompt, decode at batch 1 and 8)
 *     and through llama.cpp's Vulkan build (llama-cpp-peer.mjs, its own process), every layer on
 *     the GPU. On a software adapter llama.cpp's Vulkan backend refuses the device (SwiftShader
 *     has no 16-bit storage), so there the peer is llama.cpp's CPU build, and the table says so.
 *   - The LoRA training step: Hearth's (train.ts: rank 16 on all seven projections, T tokens,
 *     AdamW) beside PEFT + torch (peft_step.py) in f32 and bf16, same rank, modules and tokens, on
 *     the shape's random weights; and Hearth's QLoRA step over the Q4_K_M mix.
 *
 * Every figure in the tables is one this run measured; an engine that could not run says why in
 * its cell. Ratios are Hearth / peer (above 1: Hearth is faster).
 *
 * Node only (files, child processes). Not here: the file making (peer-models.ts), the
 * measurements themselves (generation.ts, train.ts).
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, openAsBlob } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import type { GpuContext } from '../../src/engine/gpu/device';
import { loadGgufModelFiles } from '../../src/engine/model/gguf/gguf-repo';
import { FilesSource } from '../../src/engine/model/sources/files-source';
import { numel } from '../../src/engine/tensor/tensor-data';
import { planParameters } from '../../src/engine/model/weights/parameter-plan';
import { BENCH_SHAPES } from './bench-models';
import { measureGeneration, type GenerationBenchResult } from './generation';
import { PEER_FORMATS, PEER_SHAPES, peerModelFile } from './peer-models';
import { weightBytesPerToken, type BenchFormat } from './quantized';
import { runTrainingBench, type TrainBenchResult } from './train';

export interface PeersOptions {
  shapes?: string[];
  formats?: BenchFormat[];
  /** Prefill prompt (default 512; quick 64). */
  promptTokens?: number;
  /** Decode steps (default 32; quick 4). */
  decodeSteps?: number;
  batches?: number[];
  /** Keep the first N layers (default all; quick 2). */
  layers?: number;
  /** Training tokens per step (default 2048; quick 32). */
  trainTokens?: number;
  rank?: number;
  /** Where the GGUF files go (default: the OS temp folder; reused when already made). */
  dir?: string;
  /** The Python that has torch, transformers and peft (default python3). */
  python?: string;
  /** The llama.cpp child: llama-cpp-peer.mjs, or its bundle on a machine without node_modules (device-pack.mjs). */
  llamaCppPeer?: string;
  /** Which tables to measure (default both), so that a time-boxed run can take them as separate steps. */
  parts?: PeerPart[];
  quick?: boolean;
}

export type PeerPart = 'decode' | 'training';

interface LlamaCppFigures {
  device: string;
  prefillTokensPerSecond: number;
  decode: Array<{ batch: number; tokensPerSecond: number; stepMs: number }>;
}

interface PeftFigures {
  device: string;
  dtype: string;
  step_ms: number;
  tokens_per_second: number;
}

/** A measurement, or why there is none. */
type Outcome<T> = { ok: T } | { error: string };

export interface PeerDecodeRow {
  model: string;
  layers: number;
  totalLayers: number;
  fileBytes: number;
  hearth: Outcome<GenerationBenchResult>;
  llamaCpp: Outcome<LlamaCppFigures>;
}

export interface PeerTrainRow {
  shape: string;
  hearth: Outcome<TrainBenchResult>;
  hearthQlora: Outcome<TrainBenchResult>;
  peftF32: Outcome<PeftFigures>;
  peftBf16: Outcome<PeftFigures>;
}

export interface PeersResult {
  llamaCppBackend: 'vulkan' | 'cpu';
  promptTokens: number;
  decodeSteps: number;
  trainTokens: number;
  rank: number;
  decode: PeerDecodeRow[];
  training: PeerTrainRow[];
}

const message = (e: unknown) => (e instanceof Error ? e.message : String(e)).split('\n')[0].slice(0, 160);

async function outcome<T>(what: string, log: (line: string) => void, run: () => Promise<T>): Promise<Outcome<T>> {
  try {
    return { ok: await run() };
  } catch (e) {
    log(`  ${what} failed: ${message(e)}`);
    return { error: message(e) };
  }
}

/** Runs a child process and returns its last stdout line as JSON; stderr goes to the log on failure. */
function runJson<T>(command: string, args: string[], env: NodeJS.ProcessEnv, timeoutMs: number): Promise<T> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      const last = out.trim().split('\n').pop() ?? '';
      if (code === 0 && last.startsWith('{')) return resolvePromise(JSON.parse(last) as T);
      const why = err.trim().split('\n').filter(Boolean).slice(-3).join(' / ') || `exit code ${code}`;
      reject(new Error(`${basename(args[0] ?? command)}: ${why}`));
    });
  });
}

/** The child's environment: the machine's Vulkan loader, or chromium's copy where the machine has none. */
function llamaCppEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  let systemLoader = false;
  try {
    systemLoader = execFileSync('ldconfig', ['-p'], { encoding: 'utf8' }).includes('libvulkan.so.1');
  } catch {
    // No ldconfig: assume none.
  }
  if (!systemLoader && existsSync('/usr/lib/chromium/libvulkan.so.1'))
    env.LD_LIBRARY_PATH = ['/usr/lib/chromium', env.LD_LIBRARY_PATH].filter(Boolean).join(':');
  return env;
}

export async function runPeersBench(gpu: GpuContext, options: PeersOptions, log: (line: string) => void = () => {}): Promise<PeersResult> {
  const software = gpu.description.adapter.isSoftware;
  const quick = options.quick ?? software;
  const P = options.promptTokens ?? (quick ? 64 : 512);
  const steps = options.decodeSteps ?? (quick ? 4 : 32);
  const batches = options.batches ?? [1, 8];
  const layers = options.layers ?? (quick ? 2 : undefined);
  const trainTokens = options.trainTokens ?? (quick ? 32 : 2048);
  const rank = options.rank ?? 16;
  const dir = options.dir ?? join(tmpdir(), 'hearth-peers');
  const backend = software ? 'cpu' : 'vulkan';
  const peerScript = resolve(options.llamaCppPeer ?? 'scripts/bench/llama-cpp-peer.mjs');
  const parts = options.parts ?? ['decode', 'training'];
  for (const p of parts) if (p !== 'decode' && p !== 'training') throw new Error(`peers: unknown part ${p} (decode, training)`);
  const env = llamaCppEnv();
  const result: PeersResult = {
    llamaCppBackend: backend,
    promptTokens: P,
    decodeSteps: steps,
    trainTokens,
    rank,
    decode: [],
    training: [],
  };

  for (const shape of parts.includes('decode') ? (options.shapes ?? PEER_SHAPES) : []) {
    for (const format of options.formats ?? PEER_FORMATS) {
      const t0 = performance.now();
      const file = peerModelFile(dir, shape, format, layers);
      log(
        `peers: ${file.name} (${file.config.numLayers} of ${file.totalLayers} layers, ${(file.bytes / 2 ** 20).toFixed(0)} MiB) ready in ${(performance.now() - t0).toFixed(0)} ms`,
      );
      const hearth = await outcome('Hearth', log, async () => {
        const blob = new File([await openAsBlob(file.path)], basename(file.path));
        const files = await loadGgufModelFiles(new FilesSource([blob]), [blob.name]);
        const parameters = planParameters(file.config).reduce((s, p) => s + numel(p.shape), 0);
        const bm = {
          name: file.name,
          files,
          parameters,
          totalLayers: file.totalLayers,
          weightBytes: weightBytesPerToken(file.config, format),
        };
        return measureGeneration(gpu, bm, { promptTokens: P, decodeSteps: steps, batches, quick }, log);
      });
      const llamaCpp = await outcome(`llama.cpp (${backend})`, log, async () => {
        const args = [peerScript, file.path, String(P), String(steps), batches.join(','), String(file.config.vocabSize), backend];
        const figures = await runJson<LlamaCppFigures>(process.execPath, args, env, 300_000);
        log(
          `  llama.cpp ${figures.device}: prefill ${figures.prefillTokensPerSecond.toFixed(0)} tokens/s, decode ${figures.decode.map((d) => `b${d.batch} ${d.tokensPerSecond.toFixed(1)}`).join(', ')} tokens/s`,
        );
        return figures;
      });
      result.decode.push({
        model: file.name,
        layers: file.config.numLayers,
        totalLayers: file.totalLayers,
        fileBytes: file.bytes,
        hearth,
        llamaCpp,
      });
    }
  }

  const python = options.python ?? 'python3';
  const peft = (shape: string, dtype: string) =>
    outcome(`PEFT ${dtype}`, log, async () => {
      const args = [
        resolve('scripts/bench/peft_step.py'),
        '--config',
        JSON.stringify(BENCH_SHAPES[shape]),
        '--tokens',
        String(trainTokens),
      ];
      args.push('--rank', String(rank), '--dtype', dtype, '--steps', quick ? '1' : '3', ...(layers ? ['--layers', String(layers)] : []));
      const figures = await runJson<PeftFigures>(python, args, process.env, 300_000);
      log(`  PEFT ${dtype} on ${figures.device}: ${figures.tokens_per_second.toFixed(0)} train tokens/s`);
      return figures;
    });
  for (const shape of parts.includes('training') ? (options.shapes ?? PEER_SHAPES) : []) {
    const train = (model: string) =>
      outcome(`Hearth training ${model}`, log, async () => {
        const [r] = await runTrainingBench(gpu, { models: [model], tokens: trainTokens, rank, layers, quick }, log);
        return r;
      });
    result.training.push({
      shape,
      hearth: await train(shape),
      hearthQlora: await train(`${shape}@q4_k_m`),
      peftF32: await peft(shape, 'float32'),
      peftBf16: await peft(shape, 'bfloat16'),
    });
  }
  return result;
}

const fmt = (x: number) => (x >= 100 ? x.toFixed(0) : x.toFixed(1));
const cell = <T>(o: Outcome<T>, value: (v: T) => number | undefined): string => {
  if ('error' in o) return `not measured: ${o.error.replace(/\|/g, '/')}`;
  const v = value(o.ok);
  return v === undefined ? 'n/a' : fmt(v);
};
const ratio = <A, B>(a: Outcome<A>, av: (v: A) => number | undefined, b: Outcome<B>, bv: (v: B) => number | undefined): string => {
  if ('error' in a || 'error' in b) return '-';
  const x = av(a.ok);
  const y = bv(b.ok);
  return x === undefined || y === undefined ? '-' : `${(x / y).toFixed(2)}x`;
};

/** The section's two tables (those of the parts measured): decode and prefill beside llama.cpp, the training step beside PEFT. */
export function peersTables(r: PeersResult): Array<{ title: string; markdown: string }> {
  const peer = r.llamaCppBackend === 'vulkan' ? 'llama.cpp Vulkan' : 'llama.cpp CPU';
  const hb = (B: number) => (g: GenerationBenchResult) => g.decode.find((d) => d.batch === B)?.tokensPerSecond;
  const lb = (B: number) => (l: LlamaCppFigures) => l.decode.find((d) => d.batch === B)?.tokensPerSecond;
  const hp = (g: GenerationBenchResult) => g.prefillTokensPerSecond;
  const lp = (l: LlamaCppFigures) => l.prefillTokensPerSecond;
  const decodeRows = r.decode.map((d) =>
    [
      `${d.model} (${d.layers === d.totalLayers ? `${d.layers} layers` : `${d.layers} of ${d.totalLayers} layers`})`,
      cell(d.hearth, hb(1)),
      cell(d.llamaCpp, lb(1)),
      ratio(d.hearth, hb(1), d.llamaCpp, lb(1)),
      cell(d.hearth, hp),
      cell(d.llamaCpp, lp),
      ratio(d.hearth, hp, d.llamaCpp, lp),
      cell(d.hearth, hb(8)),
      cell(d.llamaCpp, lb(8)),
      ratio(d.hearth, hb(8), d.llamaCpp, lb(8)),
    ].join(' | '),
  );
  const decode = [
    `Prefill: one ${r.promptTokens}-token prompt, tokens/s. Decode: greedy, ${r.decodeSteps} steps, tokens/s over all sequences. Ratio: Hearth / ${peer}.`,
    '',
    `| model (GGUF) | Hearth decode b1 | ${peer} b1 | ratio | Hearth prefill | ${peer} prefill | ratio | Hearth decode b8 | ${peer} b8 | ratio |`,
    '|---|---|---|---|---|---|---|---|---|---|',
    ...decodeRows.map((row) => `| ${row} |`),
  ].join('\n');
  const tps = (t: TrainBenchResult) => t.tokensPerSecond;
  const pps = (p: PeftFigures) => p.tokens_per_second;
  const trainRows = r.training.map((t) =>
    [
      `${t.shape}${'ok' in t.hearth && t.hearth.ok.layers !== t.hearth.ok.modelLayers ? ` (${t.hearth.ok.layers} of ${t.hearth.ok.modelLayers} layers)` : ''}`,
      cell(t.hearth, tps),
      cell(t.peftF32, pps),
      ratio(t.hearth, tps, t.peftF32, pps),
      cell(t.peftBf16, pps),
      ratio(t.hearth, tps, t.peftBf16, pps),
      cell(t.hearthQlora, tps),
    ].join(' | '),
  );
  const training = [
    `One LoRA step: rank ${r.rank} on q, k, v, o, gate, up, down, ${r.trainTokens} tokens, AdamW; train tokens/s. Hearth computes in f32 (base weights bf16); QLoRA: over the Q4_K_M mix. Ratio: Hearth / PEFT.`,
    '',
    '| model | Hearth | PEFT + torch f32 | ratio | PEFT + torch bf16 | ratio | Hearth QLoRA (Q4_K_M) |',
    '|---|---|---|---|---|---|---|',
    ...trainRows.map((row) => `| ${row} |`),
  ].join('\n');
  return [
    ...(r.decode.length ? [{ title: `Peers: decode and prefill beside ${peer}`, markdown: decode }] : []),
    ...(r.training.length ? [{ title: 'Peers: LoRA training step beside PEFT', markdown: training }] : []),
  ];
}
