/**
 * `npm run bench`: Hearth's benchmarks, in Node over Dawn (default) or in headless Chromium
 * (`--chromium`). Prints each section's table and the JSON of every figure; `--record` writes the
 * tables into docs/performance.md under the runtime and the adapter's name.
 *
 *   npm run bench                                  generation + training, all models
 *   npm run bench -- --sections generation --models tiny-chat,smollm2-135m
 *   npm run bench -- --quick                       short runs (default on software adapters)
 *   npm run bench -- --full                        the full figures even on SwiftShader (slow)
 *   npm run bench -- --prompt 512 --steps 32 --layers 4 --batches 1,8
 *   npm run bench -- --chromium --record --json results.json
 *   npm run bench -- --sections structured         JSON-schema constraint overhead per token (Node only)
 *   npm run bench -- --sections quantized          SmolLM2-135M and Qwen2.5-0.5B shapes in bf16, Q8_0 and Q4_K
 *                                                  (quantized.ts): decode tok/s, weight bytes per token, GPU memory,
 *                                                  one QLoRA step over each (training tokens/s, memory), and
 *                                                  quantize on load, weights/s per format (quantize-load.ts)
 *   npm run bench -- --sections e2e --e2e-streams 1,8,32 --e2e-tokens 64
 *                                                  chat completions through the built app's Service Worker (e2e.ts; always Chromium)
 *   npm run bench -- --sections cpu [--cpu-prompt 128 --cpu-tokens 64 --cpu-layers 4 --cpu-runs 3]
 *                                                  one GGUF through Hearth's CPU backend, its WebGPU engine and wllama
 *                                                  directly, in one Chromium: prefill and decode tok/s (cpu.ts)
 *   npm run bench -- --sections trajectories       trajectory page reads at 100 / 1,000 / 10,000 logged trajectories
 *                                                  (trajectories.ts; Node on fake-indexeddb, no GPU)
 *   npm run bench -- --sections generation,training --profile
 *                                                  also where a batch-1 decode step's and a training step's GPU
 *                                                  time goes, per kernel (profile.ts; needs timestamp-query)
 *   npm run bench -- --sections peers --full       Hearth beside llama.cpp (Vulkan) and PEFT + torch on the same GPU
 *                                                  (peers.ts): the same GGUF files (SmolLM2-135M, Qwen2.5-0.5B,
 *                                                  Llama-3.2-1B shapes in F16, Q8_0, Q4_K_M), decode and prefill,
 *                                                  and the LoRA step; --peer-shapes a,b --peer-formats f16,q4_k_m
 *                                                  --peer-dir DIR --python PATH (Node only); --peer-parts decode or
 *                                                  training measures one of its two tables; --llama-cpp-peer FILE
 *                                                  runs llama.cpp through a bundled child (device-pack.mjs)
 *   npm run bench -- --fused-max-batch 8               the largest batch decoded with the fused MLP (default 4;
 *                                                  above it the unfused GEMV pair, for Gemma the folded MLP),
 *                                                  named in every table's device
 *   npm run bench -- --decode-graph fused           which graph decodes (auto, the default: fused except for Gemma's
 *                                                  sandwich norms; fused; general), named in every table's device
 *   npm run bench -- --gemv-loads 1                 GEMV loads in flight per invocation (default 4 on GPUs; 1 is the
 *                                                  kernels before the H200 run), named in every table's device
 *   npm run bench -- --mlp-slice 32                  DecodeMlp's slice width (default 128, a multiple of 8): more
 *                                                  workgroups at batch 1, more partials for each consumer to add
 *   npm run bench -- --gemm-tile 128                 the GEMM's tile in prefill and training (default 64: 64 x 64, 4 x 4 per
 *                                                  invocation; 128: 128 x 128, 8 x 8), named in every table's device
 *   npm run bench -- --sections generation --lora-rank 16
 *                                                  also decode each batch with every request under a random LoRA
 *                                                  adapter of rank 16 on every projection (an RL rollout), beside the
 *                                                  general LoRA graph's dispatches per layer (off by default)
 *   npm run bench -- --dawn-toggles skip_validation,disable_robustness
 *                                                  Node only: Dawn's toggles on the device (node-gpu.ts); the device
 *                                                  name in every table says so, keeping these figures apart
 * Training flags: see train.ts (--train-models, --train-tokens, --train-layers, --train-steps).
 *
 * Not here: the sections themselves (generation.ts, train.ts), tables (report.ts).
 */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { acquireGpu } from '../../src/engine/gpu/device';
import { nodeGpu } from '../../src/engine/gpu/node-gpu';
import type { DecodeGraphChoice } from '../../src/engine/generate/decode-graph';
import { LORA_MAX_RANK } from '../../src/engine/kernels/lora';
import { GENERATION_BENCH_MODELS } from './bench-models';
import { runInChromium } from './chromium';
import { cpuOptionsFromArgs, cpuTable, runCpuBench, type CpuBenchResult } from './cpu';
import { e2eOptionsFromArgs, e2eTable, runE2eBench, type E2eBenchResult } from './e2e';
import { runGenerationBench, type GenerationBenchOptions, type GenerationBenchResult } from './generation';
import { quantizeLoadTable, runQuantizeLoadBench, type QuantizeLoadBenchResult } from './quantize-load';
import { QUANTIZED_BENCH_FORMATS, QUANTIZED_BENCH_SHAPES } from './quantized';
import { generationTable, loraDecodeTable, quantizedTable, recordRun } from './report';
import { runStructuredBench, type StructuredBenchResult } from './structured';
import { structuredTable } from './structured-table';
import { peersTables, runPeersBench, type PeerPart, type PeersResult } from './peers';
import { profileTable } from './profile';
import type { BenchFormat } from './quantized';
import { gemmTileArg, runTrainingBench, trainingTable, trainOptionsFromArgs, type TrainBenchResult } from './train';
import { runTrajectoryBench, trajectoryTable, type TrajectoryBenchResult } from './trajectories';

function parseArgs(argv: string[]): Record<string, string | boolean> {
  const out: Record<string, string | boolean> = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (!a.startsWith('--')) throw new Error(`bench: unexpected argument ${a}`);
    const [k, v] = a.slice(2).split('=', 2);
    if (v !== undefined) out[k] = v;
    else if (i + 1 < argv.length && !argv[i + 1].startsWith('--')) out[k] = argv[++i];
    else out[k] = true;
  }
  return out;
}

const args = parseArgs(process.argv.slice(2));
const num = (k: string) => (typeof args[k] === 'string' ? Number(args[k]) : undefined);

function decodeGraphArg(v: string | boolean | undefined): DecodeGraphChoice | undefined {
  if (v === undefined) return undefined;
  if (v === 'auto' || v === 'fused' || v === 'general') return v;
  throw new Error(`bench: --decode-graph takes auto, fused or general, not ${v}`);
}
const sections =
  typeof args.sections === 'string' ? args.sections.split(',') : ['generation', 'training', 'structured', 'e2e', 'trajectories'];
const generation: GenerationBenchOptions | null = sections.includes('generation')
  ? {
      models: typeof args.models === 'string' ? args.models.split(',') : GENERATION_BENCH_MODELS,
      promptTokens: num('prompt'),
      decodeSteps: num('steps'),
      layers: num('layers'),
      batches: typeof args.batches === 'string' ? args.batches.split(',').map(Number) : undefined,
      quick: args.quick === true ? true : args.full === true ? false : undefined,
      profile: args.profile === true,
      fusedMaxBatch: num('fused-max-batch'),
      decodeGraph: decodeGraphArg(args['decode-graph']),
      gemvLoads: num('gemv-loads'),
      mlpSlice: num('mlp-slice'),
      gemmTile: gemmTileArg(args['gemm-tile']),
      loraRank: num('lora-rank'),
    }
  : null;
const mlpSlice = generation?.mlpSlice;
if (mlpSlice !== undefined && !(Number.isInteger(mlpSlice) && mlpSlice >= 8 && mlpSlice % 8 === 0))
  throw new Error(`bench: --mlp-slice takes a positive multiple of 8, not ${args['mlp-slice']}`);
const gemvLoads = generation?.gemvLoads;
if (gemvLoads !== undefined && gemvLoads !== 1 && gemvLoads !== 4)
  throw new Error(`bench: --gemv-loads takes 1 or 4, not ${args['gemv-loads']}`);
const fusedMax = generation?.fusedMaxBatch;
if (fusedMax !== undefined && !(Number.isInteger(fusedMax) && fusedMax >= 0))
  throw new Error(`bench: --fused-max-batch takes a whole number of rows, not ${args['fused-max-batch']}`);
const loraRank = generation?.loraRank;
if (args['lora-rank'] !== undefined) {
  if (!generation) throw new Error('bench: --lora-rank measures decode in the generation section; add it to --sections');
  if (!(Number.isInteger(loraRank) && loraRank! >= 1 && loraRank! <= LORA_MAX_RANK))
    throw new Error(`bench: --lora-rank takes a rank from 1 to ${LORA_MAX_RANK}, not ${args['lora-rank']}`);
}
const training = sections.includes('training') ? trainOptionsFromArgs(args) : null;
const quantized: GenerationBenchOptions | null = sections.includes('quantized')
  ? {
      models: QUANTIZED_BENCH_SHAPES.flatMap((s) => QUANTIZED_BENCH_FORMATS.map((f) => (f === 'bf16' ? s : `${s}@${f}`))),
      promptTokens: num('prompt'),
      decodeSteps: num('steps'),
      layers: num('layers'),
      batches: [1],
      quick: args.quick === true ? true : args.full === true ? false : undefined,
    }
  : null;
const log = (line: string) => console.error(line);
/** Engine settings that change what is measured, named in every table's device so their figures stay apart. */
const engineVariant = () => [
  ...(generation?.fusedMaxBatch !== undefined ? [`fusedMaxBatch ${generation.fusedMaxBatch}`] : []),
  ...(generation?.decodeGraph !== undefined ? [`decodeGraph ${generation.decodeGraph}`] : []),
  ...(generation?.gemvLoads !== undefined ? [`gemvLoads ${generation.gemvLoads}`] : []),
  ...(generation?.mlpSlice !== undefined ? [`mlpSlice ${generation.mlpSlice}`] : []),
  ...(args['gemm-tile'] !== undefined ? [`gemmTile ${args['gemm-tile']}`] : []),
];

let runtime: 'node' | 'chromium';
let device: string;
let genResults: GenerationBenchResult[] = [];
let trainResults: TrainBenchResult[] = [];
let structuredResults: StructuredBenchResult[] = [];
let quantizedResults: GenerationBenchResult[] = [];
let quantizeLoadResults: QuantizeLoadBenchResult[] = [];
let peersResult: PeersResult | null = null;
if (args.chromium) {
  runtime = 'chromium';
  const out = await runInChromium({ generation, training }, log);
  genResults = out.generation;
  trainResults = out.training;
  if (sections.includes('structured')) log('bench: the structured section runs in Node only; skipped with --chromium');
  if (sections.includes('trajectories')) log('bench: the trajectories section runs in Node only; skipped with --chromium');
  if (quantized) log('bench: the quantized section runs in Node only; skipped with --chromium');
  if (sections.includes('peers')) log('bench: the peers section runs in Node only; skipped with --chromium');
  if (args['dawn-toggles'])
    log('bench: --dawn-toggles applies to Node (Dawn) only; the browser has no such switch, so it is ignored with --chromium');
  device = [out.device.vendor, out.device.architecture, out.device.device, out.device.description, ...engineVariant()]
    .filter((x: string) => x)
    .join(' / ');
} else if (!generation && !training && !quantized && !sections.includes('structured') && !sections.includes('peers')) {
  // Only sections that need no GPU (trajectories, e2e).
  runtime = 'node';
  device = 'no GPU, IndexedDB from fake-indexeddb';
} else {
  runtime = 'node';
  const dawnToggles = typeof args['dawn-toggles'] === 'string' ? args['dawn-toggles'].split(',') : [];
  const gpu = await acquireGpu(await nodeGpu({ dawnToggles }));
  const a = gpu.description.adapter;
  device = [
    a.vendor,
    a.architecture,
    a.device,
    a.description,
    ...(dawnToggles.length ? [`Dawn toggles ${dawnToggles.join(', ')}`] : []),
    ...engineVariant(),
  ]
    .filter((x) => x)
    .join(' / ');
  if (generation) genResults = await runGenerationBench(gpu, generation, log);
  if (training) trainResults = await runTrainingBench(gpu, training, log);
  if (quantized) {
    quantizeLoadResults = await runQuantizeLoadBench(gpu, { quick: quantized.quick }, log);
    quantizedResults = await runGenerationBench(gpu, quantized, log);
    // A QLoRA step over each quantized shape (training tokens/s and memory beside the bf16 LoRA step).
    const qlora = { ...trainOptionsFromArgs(args), models: quantized.models };
    trainResults = [...trainResults, ...(await runTrainingBench(gpu, qlora, log))];
  }
  if (sections.includes('peers')) {
    const list = (k: string) => (typeof args[k] === 'string' ? args[k].split(',') : undefined);
    peersResult = await runPeersBench(
      gpu,
      {
        shapes: list('peer-shapes'),
        formats: list('peer-formats') as BenchFormat[] | undefined,
        promptTokens: num('prompt'),
        decodeSteps: num('steps'),
        batches: list('batches')?.map(Number),
        layers: num('layers'),
        trainTokens: num('train-tokens'),
        rank: num('train-rank'),
        dir: typeof args['peer-dir'] === 'string' ? args['peer-dir'] : undefined,
        python: typeof args.python === 'string' ? args.python : undefined,
        llamaCppPeer: typeof args['llama-cpp-peer'] === 'string' ? args['llama-cpp-peer'] : undefined,
        parts: list('peer-parts') as PeerPart[] | undefined,
        quick: args.quick === true ? true : args.full === true ? false : undefined,
      },
      log,
    );
  }
  if (sections.includes('structured')) {
    structuredResults = await runStructuredBench(
      gpu,
      {
        models: typeof args.models === 'string' ? args.models.split(',') : ['tiny-chat', 'smollm2-135m'],
        decodeSteps: num('steps'),
        layers: num('layers'),
        quick: generation?.quick,
      },
      log,
    );
  }
  gpu.device.destroy();
}
const trajectoryResults: TrajectoryBenchResult[] = !args.chromium && sections.includes('trajectories') ? await runTrajectoryBench(log) : [];
const e2e: E2eBenchResult | null = sections.includes('e2e') ? await runE2eBench(e2eOptionsFromArgs(args), log) : null;
const E2E_TITLE = 'End to end through the Service Worker';
const cpu: CpuBenchResult | null = sections.includes('cpu') ? await runCpuBench(cpuOptionsFromArgs(args), log) : null;
const CPU_TITLE = 'CPU backend beside WebGPU, one GGUF';

const tables: Array<{ title: string; markdown: string }> = [];
if (genResults.length) tables.push({ title: 'Generation', markdown: generationTable(genResults) });
if (genResults.some((r) => r.loraDecode?.length))
  tables.push({ title: `Decode with LoRA adapters, rank ${loraRank}`, markdown: loraDecodeTable(genResults) });
if (trainResults.length) tables.push({ title: 'Training (one LoRA step)', markdown: trainingTable(trainResults) });
if (quantizedResults.length) tables.push({ title: 'Quantized weights (decode)', markdown: quantizedTable(quantizedResults) });
if (quantizeLoadResults.length)
  tables.push({ title: 'Quantize on load (bf16 -> blocks)', markdown: quantizeLoadTable(quantizeLoadResults) });
if (structuredResults.length)
  tables.push({ title: 'Structured outputs (JSON-schema constraint per token)', markdown: structuredTable(structuredResults) });
if (peersResult) tables.push(...peersTables(peersResult));
for (const r of genResults) {
  if (r.decodeProfile) tables.push({ title: `Where a decode step goes: ${r.model}, batch 1`, markdown: profileTable(r.decodeProfile) });
  if (r.loraDecodeProfile)
    tables.push({
      title: `Where a LoRA decode step goes: ${r.model}, batch 1, rank ${loraRank}`,
      markdown: profileTable(r.loraDecodeProfile),
    });
}
for (const r of trainResults)
  if (r.stepProfile)
    tables.push({
      title: `Where a training step goes: ${r.model}, ${r.tokens} tokens, rank ${r.rank}`,
      markdown: profileTable(r.stepProfile),
    });
if (trajectoryResults.length)
  tables.push({ title: 'Trajectory pages (store reads, fake-indexeddb)', markdown: trajectoryTable(trajectoryResults) });
for (const t of tables) console.log(`\n${t.title} (${runtime}, ${device})\n\n${t.markdown}\n`);
if (e2e) console.log(`\n${E2E_TITLE} (chromium, ${e2e.device})\n\n${e2eTable(e2e)}\n`);
if (cpu) console.log(`\n${CPU_TITLE} (chromium)\n\n${cpuTable(cpu)}\n`);
const json = {
  runtime,
  device,
  date: new Date().toISOString(),
  generation: genResults,
  training: trainResults,
  quantized: quantizedResults,
  quantizeOnLoad: quantizeLoadResults,
  structured: structuredResults,
  trajectories: trajectoryResults,
  peers: peersResult,
  e2e,
  cpu,
};
console.log(JSON.stringify(json, null, 2));
if (typeof args.json === 'string') writeFileSync(args.json, JSON.stringify(json, null, 2));
if (args.record) {
  recordRun(fileURLToPath(new URL('../../docs/performance.md', import.meta.url)), {
    runtime,
    device,
    date: json.date.slice(0, 10),
    command: `npm run bench -- ${process.argv.slice(2).join(' ')}`.trim(),
    tables,
  });
  // The e2e figures are Chromium's, on Chromium's adapter, whatever the other sections ran on.
  if (e2e) {
    recordRun(fileURLToPath(new URL('../../docs/performance.md', import.meta.url)), {
      runtime: 'chromium',
      device: e2e.device,
      date: json.date.slice(0, 10),
      command: `npm run bench -- ${process.argv.slice(2).join(' ')}`.trim(),
      tables: [{ title: E2E_TITLE, markdown: e2eTable(e2e) }],
    });
  }
  if (cpu) {
    recordRun(fileURLToPath(new URL('../../docs/performance.md', import.meta.url)), {
      runtime: 'chromium',
      device: cpu.rows
        .map((r) => r.device)
        .filter((d, i, all) => all.indexOf(d) === i)
        .join('; '),
      date: json.date.slice(0, 10),
      command: `npm run bench -- ${process.argv.slice(2).join(' ')}`.trim(),
      tables: [{ title: CPU_TITLE, markdown: cpuTable(cpu) }],
    });
  }
  console.error('bench: recorded in docs/performance.md');
}
process.exit(0);
