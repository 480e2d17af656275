// llama.cpp's Vulkan build (node-llama-cpp's prebuilt `@node-llama-cpp/linux-x64-vulkan`) on one
// GGUF file, for the peers section (peers.ts): every layer on the GPU, one sequence for prefill and
// batch-1 decode, eight sequences decoding together for batch 8 (node-llama-cpp puts the pending
// tokens of a context's sequences into one llama_decode). Its own process, started by peers.ts, so
// that llama.cpp's Vulkan device and Dawn's never share a process and the Vulkan loader can be
// pointed at with LD_LIBRARY_PATH.
//
//   node scripts/bench/llama-cpp-peer.mjs <file.gguf> <prompt tokens> <decode steps> <batches, e.g. 1,8> <vocabulary size> [vulkan|cpu]
//
// `cpu` runs llama.cpp's CPU build instead (every core), for a machine whose Vulkan device llama.cpp
// refuses: SwiftShader lacks the 16-bit storage llama.cpp's Vulkan backend needs.
//
// Prints one JSON line: {device, prefillTokensPerSecond, prefillMs, decode: [{batch, tokensPerSecond,
// stepMs}]}. The figures are measured as peers.ts measures Hearth: prefill is one P-token prompt into a
// fresh sequence after a warm-up of the same length; decode is greedy from a 16-token prompt, timed from
// the moment every sequence has its first token to the last token. Plain JS (no TypeScript), so the
// bundled bench can start it with node alone.
import { getLlama, LlamaLogLevel } from 'node-llama-cpp';

const [path, promptArg, stepsArg, batchesArg, vocabArg, backend = 'vulkan'] = process.argv.slice(2);
const P = Number(promptArg);
const steps = Number(stepsArg);
const batches = batchesArg.split(',').map(Number);
const vocab = Number(vocabArg);

const gpu = backend === 'cpu' ? false : 'vulkan';
const llama = await getLlama({ gpu, build: 'never', logLevel: LlamaLogLevel.error });
if (llama.gpu !== gpu) throw new Error(`llama.cpp peer: no ${backend} build or device (got ${llama.gpu})`);
const deviceNames = gpu ? await llama.getGpuDeviceNames() : [];
// The Vulkan build loads without a usable device too (SwiftShader's lacks 16-bit storage) and then
// computes on the CPU: refuse, so that no CPU figure is reported as Vulkan's.
if (gpu && deviceNames.length === 0) throw new Error('llama.cpp peer: the Vulkan build found no Vulkan device it can use');
const device = gpu ? `Vulkan: ${deviceNames.join(', ')}` : `CPU, ${llama.cpuMathCores} threads`;
const model = await llama.loadModel({ modelPath: path, gpuLayers: gpu ? 'max' : 0 });
const prompt = (n, seed) => Array.from({ length: n }, (_, i) => 1 + ((i * 7919 + seed * 104729) % (vocab - 2)));
const maxBatch = Math.max(...batches);
const context = await model.createContext({
  contextSize: Math.max(P, 16 + steps + 8) * maxBatch + 64,
  batchSize: Math.max(P, 16 * maxBatch),
  sequences: maxBatch,
  ...(gpu ? {} : { threads: llama.cpuMathCores }),
});

async function prefill(seed) {
  const seq = context.getSequence();
  const t0 = performance.now();
  await seq.evaluateWithoutGeneratingNewTokens(prompt(P, seed));
  const ms = performance.now() - t0;
  await seq.dispose();
  return ms;
}

/** Token arrival times of one greedy sequence, `n` tokens. */
async function decodeTimes(seq, seed, n) {
  const times = [];
  for await (const token of seq.evaluate(prompt(16, seed), { temperature: 0 })) {
    void token;
    times.push(performance.now());
    if (times.length >= n) break;
  }
  return times;
}

await prefill(1); // warm-up: the prompt-length kernels
const prefillMs = await prefill(2);
const decode = [];
for (const B of batches) {
  const seqs = Array.from({ length: B }, () => context.getSequence());
  const run = async (seed, n) => {
    const times = await Promise.all(seqs.map((s, i) => decodeTimes(s, seed + i, n)));
    for (const s of seqs) await s.clearHistory();
    return times;
  };
  await run(100 * B, 3); // warm-up
  const times = await run(1000 * B, steps + 1);
  for (const s of seqs) await s.dispose();
  const from = Math.max(...times.map((t) => t[0]));
  const to = Math.max(...times.map((t) => t[t.length - 1]));
  const tokens = times.reduce((s, t) => s + t.filter((x) => x > from).length, 0);
  decode.push({ batch: B, tokensPerSecond: tokens / ((to - from) / 1000), stepMs: (to - from) / Math.max(1, Math.round(tokens / B)) });
}
console.log(JSON.stringify({ device, prefillMs, prefillTokensPerSecond: P / (prefillMs / 1000), decode }));
await context.dispose();
await model.dispose();
await llama.dispose();
