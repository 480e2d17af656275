// Shared set-up of the Engine GPU tests: an Engine on Dawn (SwiftShader here) serving the bundled
// test models from public/models, the reference model of the same weights, and helpers that run a
// request to the end and gather its events per choice.
import { acquireGpu, type GpuContext } from '../../src/engine/gpu/device';
import { nodeGpu } from '../../src/engine/gpu/node-gpu';
import { Engine, type EngineOptions } from '../../src/engine/generate/engine';
import type { FinishReason, GenerationHandle, GenerationRequest, PromptLogprob, SampledToken } from '../../src/engine/generate/types';
import { loadModelFiles } from '../../src/engine/model/files/repo';
import { BundledSource } from '../../src/engine/model/sources/bundled-source';
import type { TensorData } from '../../src/engine/tensor/tensor-data';
import { ReferenceModel } from '../../src/engine/reference/model';

let gpu: Promise<GpuContext> | null = null;

/** One device per test file (Dawn adapters are costly to create on 2 cores). */
export function testGpu(): Promise<GpuContext> {
  gpu ??= nodeGpu().then((g) => acquireGpu(g));
  return gpu;
}

export function bundled(id: string): BundledSource {
  return new BundledSource(`models/${id.split('/')[1]}/`, { id });
}

export async function testEngine(opts: Partial<EngineOptions> = {}): Promise<Engine> {
  return new Engine(await testGpu(), { source: async (id) => bundled(id), kvCacheBytes: 8 << 20, maxSeqs: 16, prefillChunk: 64, ...opts });
}

export async function referenceOf(id: string): Promise<{ ref: ReferenceModel; tensors: TensorData[] }> {
  const files = await loadModelFiles(bundled(id));
  const tensors: TensorData[] = [];
  for await (const t of files.tensors()) tensors.push(t);
  return { ref: new ReferenceModel(files.config, tensors), tensors };
}

export interface Outcome {
  prefilled: { promptTokens: number; cachedTokens: number; promptLogprobs: (PromptLogprob | null)[] | null } | null;
  tokens: number[][];
  sampled: SampledToken[][];
  finish: Array<{ reason: FinishReason; stopTokenId: number | null; cumulativeLogprob?: number } | undefined>;
}

/** Reads a handle to the end. `onEvent` sees each event first (to abort, stop choices, submit more). */
export async function collect(
  handle: GenerationHandle,
  n: number,
  onEvent?: (ev: unknown, out: Outcome) => void | Promise<void>,
): Promise<Outcome> {
  const out: Outcome = {
    prefilled: null,
    tokens: Array.from({ length: n }, () => []),
    sampled: Array.from({ length: n }, () => []),
    finish: new Array(n).fill(undefined),
  };
  for await (const ev of handle) {
    if (ev.type === 'prefilled')
      out.prefilled = { promptTokens: ev.promptTokens, cachedTokens: ev.cachedTokens, promptLogprobs: ev.promptLogprobs };
    else if (ev.type === 'tokens') {
      out.tokens[ev.choice].push(...ev.tokens.map((t) => t.id));
      out.sampled[ev.choice].push(...ev.tokens);
    } else out.finish[ev.choice] = { reason: ev.reason, stopTokenId: ev.stopTokenId, cumulativeLogprob: ev.cumulativeLogprob };
    await onEvent?.(ev, out);
  }
  return out;
}

/** A request with vLLM's defaults for what the test does not set. */
export function request(
  model: string,
  prompt: number[],
  over: Partial<GenerationRequest> & { temperature?: number; seed?: number; ignoreEos?: boolean } = {},
): GenerationRequest {
  const n = over.n ?? 1;
  const { temperature, seed, ignoreEos, ...rest } = over;
  return {
    model,
    adapter: null,
    promptTokenIds: prompt,
    n,
    sampling: Array.from({ length: n }, (_, i) => ({
      temperature: temperature ?? 0,
      seed: seed === undefined ? undefined : seed + i,
      ignoreEos,
      eosTokenIds: [],
    })),
    maxTokens: 8,
    promptLogprobs: null,
    badWords: [],
    ...rest,
  };
}

export function promptOf(len: number, V: number, salt = 0): number[] {
  return Array.from({ length: len }, (_, i) => 1 + ((i * 131 + salt * 17 + 7) % (V - 1)));
}
