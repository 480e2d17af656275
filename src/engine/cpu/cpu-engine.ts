/**
 * CpuEngine: the InferenceEngine that runs without WebGPU, on llama.cpp compiled to WebAssembly
 * (wllama, one instance per resident base model, in a worker of its own). It serves chat
 * completions behind the same contract as the WebGPU engine (generate/types.ts): the service
 * renders and tokenises prompts, detokenises, matches stop strings and parses tool calls and
 * reasoning exactly as for WebGPU; this engine samples token ids (cpu-choice.ts).
 *
 * What it cannot do is false in its `capabilities` (the service answers those requests with a 4xx
 * first); `generate` refuses them again, so nothing reaches llama.cpp half-supported.
 *
 * Not here: the GGUF it loads (cpu-models.ts, cpu-gguf.ts), the sampler fields (llama-sampling.ts).
 */
import { LoggerWithoutDebug, Wllama, WllamaRuntimeError } from '@wllama/wllama/esm/index.js';
import { EventStream } from '../generate/event-stream';
import { resolveSampling } from '../sampling/sampling-params';
import type {
  EngineCapabilities,
  GenerationEvent,
  GenerationHandle,
  GenerationRequest,
  InferenceEngine,
  LoadModelOptions,
  ServedModel,
} from '../generate/types';
import { asRepository, type ModelRepository } from '../model/files/model-repository';
import type { ModelFileCache } from '../model/sources/file-cache';
import type { ModelSource } from '../model/sources/source';
import { runChoice, type CompleteFn } from './cpu-choice';
import { loadCpuModel } from './cpu-models';

export interface CpuEngineOptions {
  /** The repository of a catalogue model id, as for the WebGPU engine. */
  source(id: string): Promise<ModelSource | ModelRepository>;
  /** Where a safetensors model's GGUF copy is kept (IndexedDB in the app). */
  cache: ModelFileCache | null;
  /** URL of wllama.wasm, served from the app's origin. */
  wasmUrl: string;
  /** llama.cpp threads: 1 unless the page is cross-origin isolated (SharedArrayBuffer). */
  threads: number;
  /** Why the engine runs on the CPU ("no WebGPU adapter: ...", "CPU chosen in Settings"). */
  why: string;
  /** Cap on the served context (llama.cpp's n_ctx, shared by the concurrent requests). Default 4096. */
  maxModelLen?: number;
}

interface CpuModel {
  served: ServedModel;
  wllama: Wllama;
  /** Bytes of the GGUF llama.cpp holds in its memory. */
  bytes: number;
}

/** Requests decoded together by llama.cpp (its server's slots). */
const PARALLEL = 4;

export class CpuEngine implements InferenceEngine {
  readonly capabilities: EngineCapabilities;
  private readonly loading = new Map<string, Promise<CpuModel>>();
  private readonly resident = new Map<string, CpuModel>();

  constructor(private readonly opts: CpuEngineOptions) {
    const threads = `${opts.threads} thread${opts.threads === 1 ? '' : 's'}`;
    this.capabilities = {
      backend: 'cpu',
      description: `CPU: llama.cpp (WebAssembly), ${threads}`,
      training: false,
      beamSearch: false,
      promptLogprobs: false,
      structuredOutputs: false,
      loraAdapters: false,
      multiTokenBadWords: false,
      missing: `needs WebGPU (this engine runs on the CPU, ${opts.why})`,
    };
  }

  async loadModel(id: string, options: LoadModelOptions = {}): Promise<ServedModel> {
    let p = this.loading.get(id);
    if (!p) {
      p = this.load(id, options);
      this.loading.set(id, p);
      p.catch(() => this.loading.delete(id));
    }
    return (await p).served;
  }

  /** Models in llama.cpp's memory, with their bytes (reported as the base model's gpu_bytes). */
  get models(): { served: ServedModel; gpuBytes: number }[] {
    return [...this.resident.values()].map((m) => ({ served: m.served, gpuBytes: m.bytes }));
  }

  generate(request: GenerationRequest): GenerationHandle {
    const controllers = Array.from({ length: request.n }, () => new AbortController());
    const abortAll = () => controllers.forEach((c) => c.abort());
    const stream = new EventStream({ onCancel: abortAll, onStopChoice: (i) => controllers[i]?.abort() });
    for (const c of request.constraints ?? []) c?.dispose();
    const model = this.resident.get(request.model);
    const refusal = model ? this.refusal(request) : `The model ${request.model} is not loaded: call loadModel first.`;
    if (refusal || !model) {
      stream.fail(new Error(refusal ?? 'unreachable'));
      return stream;
    }
    request.signal?.addEventListener('abort', abortAll, { once: true });
    let prefilled = false;
    const push = (e: GenerationEvent) => {
      if (!prefilled) {
        prefilled = true;
        stream.push({ type: 'prefilled', promptTokens: request.promptTokenIds.length, cachedTokens: 0, promptLogprobs: null });
      }
      stream.push(e);
    };
    const complete: CompleteFn = async (body, onFrame, signal) => {
      await model.wllama.createCompletion({ ...body, stream: true, onData: onFrame, abortSignal: signal } as never);
    };
    const vocabSize = model.served.config.vocabSize;
    const banned = request.badWords.map((w) => w[0]);
    const runs = request.sampling.map((params, index) =>
      runChoice(
        {
          index,
          promptTokenIds: request.promptTokenIds,
          sampling: resolveSampling(params, vocabSize),
          eosTokenIds: params.eosTokenIds ?? [],
          ignoreEos: params.ignoreEos ?? false,
          stopTokenIds: params.stopTokenIds ?? [],
          maxTokens: request.maxTokens,
          bannedTokenIds: banned,
          vocabSize,
          contextLength: model.served.maxModelLen,
          logprobs: params.returnLogprobs ?? true,
        },
        complete,
        push,
        controllers[index].signal,
      ),
    );
    Promise.all(runs).then(
      () => stream.end(),
      (err: unknown) => {
        abortAll();
        stream.fail(err);
        this.forgetIfCrashed(request.model, model, err);
      },
    );
    return stream;
  }

  /**
   * A wasm that aborted (out of memory, a failed assertion) answers nothing again: the model is
   * dropped, so the next request loads it anew instead of failing the same way forever.
   */
  private forgetIfCrashed(id: string, model: CpuModel, err: unknown): void {
    const message = err instanceof Error ? err.message : String(err);
    if (!(err instanceof WllamaRuntimeError) && !/crashed/i.test(message)) return;
    if (this.resident.get(id) !== model) return;
    this.resident.delete(id);
    this.loading.delete(id);
    model.wllama.exit().catch(() => undefined);
  }

  /** Why this engine cannot run `request` (the service has refused these already), or null. */
  private refusal(r: GenerationRequest): string | null {
    const missing = this.capabilities.missing;
    if (r.beamSearch) return `Beam search ${missing}.`;
    if (r.promptLogprobs !== null) return `prompt_logprobs ${missing}.`;
    if (r.adapter) return `A LoRA checkpoint ${missing}.`;
    if ((r.constraints ?? []).some((c) => c !== null)) return `Structured outputs ${missing}.`;
    if (r.badWords.some((w) => w.length !== 1)) return `bad_words of more than one token ${missing}.`;
    return null;
  }

  private async load(id: string, options: LoadModelOptions): Promise<CpuModel> {
    const repo = asRepository(await this.opts.source(id));
    const { files, gguf } = await loadCpuModel(id, repo, this.opts.cache, options);
    options.signal?.throwIfAborted();
    const maxModelLen = Math.min(files.config.maxPositionEmbeddings, this.opts.maxModelLen ?? 4096);
    const wllama = new Wllama({ default: this.opts.wasmUrl }, { suppressNativeLog: true, logger: LoggerWithoutDebug });
    await wllama.loadModel(gguf, {
      n_ctx: maxModelLen,
      n_threads: this.opts.threads,
      // Never WebGPU: this engine is the one without it.
      n_gpu_layers: 0,
      n_parallel: PARALLEL,
      kv_unified: true,
    });
    const served: ServedModel = {
      id,
      config: files.config,
      tokenizer: files.tokenizer,
      chatTemplates: files.chatTemplates,
      generation: files.generation,
      eosTokenIds: files.eosTokenIds,
      maxModelLen,
    };
    const model = { served, wllama, bytes: gguf.reduce((sum, f) => sum + f.size, 0) };
    this.resident.set(id, model);
    return model;
  }
}
