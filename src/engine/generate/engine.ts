/**
 * Engine: the InferenceEngine the service drives (types.ts). It owns the GPU context and kernel
 * families of the device, and the base models resident on it: `loadModel(id)` reads the model's
 * repository from wherever `sources` says (bundled files, the IndexedDB cache, Hugging Face),
 * uploads its weights as they stream in and starts its scheduler; `generate(request)` queues a
 * request on the resident model's scheduler (continuous batching, prefix cache, LoRA adapters).
 *
 * For the trainer: `residentWeights(id)` and `kernelContext` give the model's resident WeightSet and
 * the device's KernelContext (engine/train/engine.ts `ResidentWeightsProvider`), so training runs
 * on the same device over the same weights (no second copy).
 *
 * Not here: request validation (the service), batching (scheduler.ts), GPU steps (model-runner.ts).
 */
import type { GpuContext, GpuDescription } from '../gpu/device';
import { createKernelContext, type GemmTileName, type KernelContext } from '../gpu/context';
import { createDenseKernels, type DenseKernels } from '../kernels/registry';
import { asRepository, loadRepository, type ModelRepository } from '../model/files/model-repository';
import type { LoadedModelFiles } from '../model/files/repo';
import type { ModelSource } from '../model/sources/source';
import type { WeightSet } from '../model/weights/weight-set';
import { EventStream } from './event-stream';
import type { DecodeGraphChoice } from './decode-graph';
import { ResidentModel } from './resident-model';
import type { EngineCapabilities, GenerationHandle, GenerationRequest, InferenceEngine, LoadModelOptions, ServedModel } from './types';

export interface EngineOptions {
  /** The repository of a catalogue model id (a bare source is a safetensors one); rejects when the id is unknown. */
  source(id: string): Promise<ModelSource | ModelRepository>;
  /** GPU bytes of each model's KV cache. Default 256 MiB (64 MiB on software adapters). */
  kvCacheBytes?: number;
  /** Sequences decoded together (the batch limit). Default 64. */
  maxSeqs?: number;
  /** Tokens per prefill step. Default 512. */
  prefillChunk?: number;
  /** Cap on the served context length (default: each model's max_position_embeddings). */
  maxModelLen?: number;
  /** Largest decode batch using the fused MLP. Default 4 (docs/engine.md "Decode step"). */
  fusedMaxBatch?: number;
  /** Which graph decodes (decode-graph.ts DecodeGraphChoice). Default 'auto'. */
  decodeGraph?: DecodeGraphChoice;
  /** KernelContext.gemvLoads (a bench setting: the GEMV loads in flight per invocation). */
  gemvLoads?: number;
  /** DecodeMlp's slice width (a bench setting; decode-mlp.ts DEFAULT_MLP_SLICE). */
  mlpSlice?: number;
  /** KernelContext.gemmTile (a bench setting: the prefill GEMM's tile). */
  gemmTile?: GemmTileName;
  /** GPU bytes of each model's LoRA adapter pool. Default 256 MiB. */
  loraPoolBytes?: number;
  /**
   * Jump-forward decoding of grammar-forced tokens (jump-forward.ts). Default: on for GPUs, off for
   * software adapters. On an H100 it takes 0.39 steps per token and runs 1.3x the tokens/s of
   * token-by-token decoding (SmolLM2-135M shape); on SwiftShader, where a step costs what it
   * computes rather than its latency, the k + 1 rows of a draft make it slower (docs/performance.md
   * "Jump-forward decoding").
   */
  jumpForward?: boolean;
}

/** The WebGPU engine does everything the API offers; `description` names the adapter. */
export function webgpuCapabilities(gpu: GpuDescription): EngineCapabilities {
  const a = gpu.adapter;
  const name = [a.vendor, a.architecture, a.device, a.description].filter(Boolean).join(' ') || 'adapter';
  return {
    backend: 'webgpu',
    description: `WebGPU: ${name}${a.isSoftware ? ' (software)' : ''}`,
    training: true,
    beamSearch: true,
    promptLogprobs: true,
    structuredOutputs: true,
    loraAdapters: true,
    multiTokenBadWords: true,
    missing: '',
  };
}

export class Engine implements InferenceEngine {
  readonly kernelContext: KernelContext;
  private readonly dense: DenseKernels;
  private readonly loading = new Map<string, Promise<ResidentModel>>();
  private readonly resident = new Map<string, ResidentModel>();
  readonly capabilities: EngineCapabilities;

  constructor(
    readonly gpu: GpuContext,
    private readonly opts: EngineOptions,
  ) {
    // Small GEMV workgroups on software adapters: several times faster decode steps there.
    this.kernelContext = createKernelContext(gpu, {
      gemvWorkgroupSize: gpu.description.adapter.isSoftware ? 64 : undefined,
      gemvLoads: opts.gemvLoads,
      gemmTile: opts.gemmTile,
    });
    this.dense = createDenseKernels(this.kernelContext);
    this.capabilities = webgpuCapabilities(gpu.description);
  }

  async loadModel(id: string, options: LoadModelOptions = {}): Promise<ServedModel> {
    return (await this.residentModel(id, options)).served;
  }

  /** The resident model (loading it once; concurrent callers share the load). */
  residentModel(id: string, options: LoadModelOptions = {}): Promise<ResidentModel> {
    let p = this.loading.get(id);
    if (!p) {
      p = this.load(id, options);
      this.loading.set(id, p);
      // A failed load is forgotten: the next request tries again (the network may be back).
      p.catch(() => this.loading.delete(id));
    }
    return p;
  }

  /**
   * Serves repository files read elsewhere (picked files, a benchmark's random weights) as model
   * `id`; the weights stream from `files.tensors()`. A model already resident under `id` is kept.
   */
  loadFiles(id: string, files: LoadedModelFiles): Promise<ServedModel> {
    let p = this.loading.get(id);
    if (!p) {
      p = this.residentFrom(id, files);
      this.loading.set(id, p);
      p.catch(() => this.loading.delete(id));
    }
    return p.then((m) => m.served);
  }

  /** For the trainer: the base model's weights on this engine's device (loaded if needed). */
  async residentWeights(id: string): Promise<WeightSet> {
    return (await this.residentModel(id)).weights;
  }

  generate(request: GenerationRequest): GenerationHandle {
    const model = this.resident.get(request.model);
    if (!model) {
      for (const c of request.constraints ?? []) c?.dispose();
      const stream = new EventStream({ onCancel() {}, onStopChoice() {} });
      stream.fail(new Error(`The model ${request.model} is not loaded on the GPU: call loadModel first.`));
      return stream;
    }
    return model.scheduler.submit(request);
  }

  /** Models on the GPU. */
  get models(): ResidentModel[] {
    return [...this.resident.values()];
  }

  private async load(id: string, options: LoadModelOptions): Promise<ResidentModel> {
    const repository = asRepository(await this.opts.source(id));
    const files = await loadRepository(repository, { signal: options.signal, onProgress: options.onProgress });
    options.signal?.throwIfAborted();
    return this.residentFrom(id, files);
  }

  private async residentFrom(id: string, files: LoadedModelFiles): Promise<ResidentModel> {
    const model = await ResidentModel.load(this.kernelContext, this.dense, id, files, {
      // A software adapter's buffers are system memory: a smaller default cache there.
      kvCacheBytes: this.opts.kvCacheBytes ?? (this.gpu.description.adapter.isSoftware ? 64 : 256) * 2 ** 20,
      maxSeqs: this.opts.maxSeqs ?? 64,
      prefillChunk: this.opts.prefillChunk ?? 512,
      maxModelLen: this.opts.maxModelLen,
      fusedMaxBatch: this.opts.fusedMaxBatch,
      decodeGraph: this.opts.decodeGraph,
      mlpSlice: this.opts.mlpSlice,
      loraPoolBytes: this.opts.loraPoolBytes,
      softwareAdapter: this.gpu.description.adapter.isSoftware,
    });
    model.scheduler.jumpForward = this.opts.jumpForward ?? !this.gpu.description.adapter.isSoftware;
    this.resident.set(id, model);
    return model;
  }
}
