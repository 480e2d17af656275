// Browser side of test/e2e/model-loading.test.ts: bundled by the test (Vite, IIFE) and loaded into
// an app page, it exposes `window.HearthModelE2E` with the model-loading steps run for real in
// Chromium: the catalogue and bundled files over fetch from the app's origin, the IndexedDB file
// cache ("hearth-model-files"), downloads from another origin with resume, the tokenizer and
// chat template, the weights uploaded to WebGPU, and greedy generation.
import { acquireGpu } from '../../src/engine/gpu/device';
import { bundledSource, fetchCatalog } from '../../src/engine/model/sources/catalog';
import { loadModelFiles, type LoadedModelFiles } from '../../src/engine/model/files/repo';
import type { ChatMessage } from '../../src/engine/model/text/chat-template';
import { UrlSource } from '../../src/engine/model/sources/url-source';
import type { TensorData } from '../../src/engine/tensor/tensor-data';
import { WeightSet } from '../../src/engine/model/weights/weight-set';
import { greedyDecode, ReferenceModel } from '../../src/engine/reference/model';
import { IdbModelFileCache, MODEL_FILES_DB } from '../../src/store/model-files';

const cache = new IdbModelFileCache();
const offlineFetch: typeof fetch = () => Promise.reject(new TypeError('Failed to fetch (offline)'));
const loaded = new Map<string, LoadedModelFiles>();

async function loadBundled(id: string, opts: { offline?: boolean } = {}) {
  const entry = (await fetchCatalog(location.href)).find((e) => e.id === id);
  if (!entry) throw new Error(`no bundled model ${id}`);
  const progress: Array<{ file: string; loaded: number; total: number | null; fromCache: boolean }> = [];
  const files = await loadModelFiles(bundledSource(entry, { cache, fetch: opts.offline ? offlineFetch : undefined }), {
    onProgress: (p) => progress.push({ file: p.file, loaded: p.loaded, total: p.total, fromCache: p.fromCache ?? false }),
  });
  loaded.set(id, files);
  return { config: files.config, eosTokenIds: files.eosTokenIds, weightBytes: files.weightBytes, progress };
}

async function loadFromUrl(repo: string, hfBase: string, retries?: number) {
  const files = await loadModelFiles(new UrlSource(repo, { hfBase, cache, chunkBytes: 256 << 10, retryDelayMs: 10, retries }));
  loaded.set(repo, files);
  let n = 0;
  for await (const t of files.tensors()) n += t.data.byteLength;
  return { arch: files.config.arch, tensorBytes: n, weightBytes: files.weightBytes };
}

async function tensorsOf(id: string): Promise<TensorData[]> {
  const out: TensorData[] = [];
  for await (const t of loaded.get(id)!.tensors()) out.push(t);
  return out;
}

/** Chat prompt -> ids -> greedy tokens -> streamed text, all in the page. */
async function generate(id: string, messages: ChatMessage[], steps: number) {
  const files = loaded.get(id)!;
  const prompt = files.chatTemplates.forRequest().render({ messages, addGenerationPrompt: true });
  const promptIds = files.tokenizer.encode(prompt, { addSpecialTokens: false });
  const model = new ReferenceModel(files.config, await tensorsOf(id));
  const generated = greedyDecode(model, promptIds, steps);
  const detok = files.tokenizer.detokenizer({ skipSpecialTokens: true });
  const deltas = generated.map((t) => detok.push(t));
  deltas.push(detok.finish());
  return {
    prompt,
    promptIds,
    generated,
    deltas,
    text: detok.text,
    decoded: files.tokenizer.decode(generated, { skipSpecialTokens: true }),
  };
}

async function uploadToGpu(id: string) {
  const files = loaded.get(id)!;
  const gpu = await acquireGpu(navigator.gpu);
  const weights = await WeightSet.upload(gpu.device, files.config, files.tensors());
  const bytes = weights.gpuBytes;
  gpu.device.destroy();
  return { bytes, adapter: gpu.description.adapter };
}

async function databases() {
  return (await indexedDB.databases()).map((d) => d.name);
}

(globalThis as Record<string, unknown>).HearthModelE2E = {
  MODEL_FILES_DB,
  loadBundled,
  loadFromUrl,
  generate,
  uploadToGpu,
  databases,
  listCached: () => cache.listModels(),
  removeCached: (id: string) => cache.removeModel(id),
};
