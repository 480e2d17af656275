/**
 * The engine worker's side of the bridge: boots the engine once, then serves `EngineApi` with
 * Comlink on every port the hosting page hands over (one per Service Worker connection; a
 * restarted Service Worker asks for a new one).
 *
 * Not here: booting itself (engine-boot.ts), the Service Worker side (sw/).
 */
import * as Comlink from 'comlink';
import wllamaWasm from '@wllama/wllama/esm/wasm/wllama.wasm?url';
import { CpuEngine } from '../engine/cpu/cpu-engine';
import { Engine as GenerationEngine } from '../engine/generate/engine';
import { catalogSources } from '../engine/generate/model-sources';
import { trainingEngineOver } from '../engine/train/engine';
import { jsonErrorResponse } from '../service/error-envelope';
import { IdbModelFileCache } from '../store/model-files';
import { fromWireRequest, MSG, toWireResponse, wireAbortSignal, type EngineApi, type WireRequest } from './wire';
import { bootEngine, type Engine } from './engine-boot';

/**
 * llama.cpp's threads: half the cores (wllama's own default; up to 8) when the page is cross-origin
 * isolated, else one (no SharedArrayBuffer). Not every core: ggml's threads spin at each barrier,
 * and on a shared 2-core machine 2 threads decoded at 5-30 tokens/s where 1 thread did 40-71
 * (docs/cpu-backend.md "Threads").
 */
function cpuThreads(scope: { crossOriginIsolated: boolean; navigator: { hardwareConcurrency: number } }): number {
  return scope.crossOriginIsolated ? Math.min(8, Math.max(1, Math.floor((scope.navigator.hardwareConcurrency || 1) / 2))) : 1;
}

export function serveEngine(scope: DedicatedWorkerGlobalScope): void {
  const origin = scope.location.origin;
  const booting: Promise<Engine> = bootEngine({
    manifestUrl: new URL('/models/index.json', origin).href,
    baseUrl: origin,
    gpu: scope.navigator.gpu,
    // Base models downloaded or uploaded through /v1/preview/base-models (and storage sums).
    modelFiles: new IdbModelFileCache(),
    // Chat completions: the generation engine on this worker's GPU, models from the catalogue
    // (bundled files through the IndexedDB file cache, so they load offline after the first time).
    inference: (gpu, catalog) =>
      new GenerationEngine(gpu, {
        source: catalogSources({ baseUrl: origin, lookup: (id) => catalog.get(id), cache: new IdbModelFileCache() }),
      }),
    // Training jobs: LoRA on the same device over the generation engine's resident weights.
    training: (inference) => trainingEngineOver(inference),
    // Without a WebGPU adapter (or with "cpu" chosen in Settings): llama.cpp in WebAssembly, its
    // wasm bundled with the app. Threads need SharedArrayBuffer, so cross-origin isolation.
    cpuInference: (why, catalog) =>
      new CpuEngine({
        source: catalogSources({ baseUrl: origin, lookup: (id) => catalog.get(id), cache: new IdbModelFileCache() }),
        cache: new IdbModelFileCache(),
        wasmUrl: new URL(wllamaWasm, origin).href,
        threads: cpuThreads(scope),
        why,
      }),
  });
  booting.catch((err) => console.error('[hearth] engine failed to start:', err));

  const api: EngineApi = {
    async handle(wire: WireRequest) {
      let res: Response;
      try {
        const engine = await booting;
        const { request, release } = fromWireRequest(wire, wireAbortSignal(wire));
        try {
          res = await engine.app.fetch(request);
        } finally {
          // Answered: a stream is cancelled through its body from now on, and what the app did
          // not read of the request body is not pulled across.
          wire.abort?.close();
          release();
        }
      } catch (err) {
        wire.body?.cancel().catch(() => undefined);
        // Boot failed (e.g. IndexedDB unavailable in this profile): say so instead of a network error.
        const message = `The Hearth engine failed to start: ${err instanceof Error ? err.message : String(err)}`;
        res = jsonErrorResponse(new URL(wire.url).pathname, 503, message);
      }
      const out = toWireResponse(res);
      return Comlink.transfer(out, out.body ? [out.body as unknown as Transferable] : []);
    },
    async ping() {
      const engine = await booting;
      return { startedAt: engine.services.now() };
    },
    async adminKey() {
      return (await booting).adminKey;
    },
  };

  scope.addEventListener('message', (event: MessageEvent) => {
    if (event.data?.type === MSG.connect && event.data.port instanceof MessagePort) {
      Comlink.expose(api, event.data.port);
    }
  });
}
