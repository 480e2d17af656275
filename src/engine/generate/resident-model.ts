/**
 * ResidentModel: a base model loaded onto the GPU and ready to serve: its weights (WeightSet, in file
 * precision), its paged KV cache sized by the engine's memory budget, the block manager, the model
 * runner (step buffers, sampler) and the scheduler, plus the LoRA adapter pool created on the first
 * adapter. `maxModelLen` is the smallest of max_position_embeddings, the engine's cap and what the
 * KV cache holds (one sequence must fit); when every layer slides a sequence holds only its window's
 * blocks (model/kv/block-manager.ts), so the cache bounds it only if it cannot hold a window and a chunk. A
 * hybrid model's sliding layers get a pool of their own sized from the window (model/kv/kv-pools.ts),
 * and its full-attention layers' pool bounds the context.
 *
 * Not here: where the files come from and the catalogue (engine.ts), steps (model-runner.ts).
 */
import { modelWindow } from '../model/config/attention-window';
import { planKvPools, type KvPoolPlan } from '../model/kv/kv-pools';
import type { KernelContext } from '../gpu/context';
import type { DenseKernels } from '../kernels/registry';
import { samplerWorkgroupSize } from '../kernels/sampler';
import type { LoadedModelFiles } from '../model/files/repo';
import { KvCache, kvBytesPerToken, kvShapeOf } from '../model/kv/kv-cache';
import { KV_BLOCK } from '../kernels/kv-layout';
import { GpuQuantizer } from '../model/quant/quantize-upload';
import { WeightSet } from '../model/weights/weight-set';
import { KvBlockManager } from '../model/kv/block-manager';
import type { DecodeGraphChoice } from './decode-graph';
import { LoraPool } from './lora-pool';
import { ModelRunner } from './model-runner';
import { Scheduler } from './scheduler';
import type { ServedModel } from './types';

export interface ResidentModelOptions {
  /** GPU bytes of the KV cache (all layers, K and V). */
  kvCacheBytes: number;
  /** Sequences decoded at once (block-table rows, sampler slots, the decode batch limit). */
  maxSeqs: number;
  /** Tokens per prefill step. */
  prefillChunk: number;
  /** Upper bound on the context length (default: the model's max_position_embeddings). */
  maxModelLen?: number;
  fusedMaxBatch?: number;
  decodeGraph?: DecodeGraphChoice;
  mlpSlice?: number;
  loraPoolBytes?: number;
  /** The adapter is a software rasteriser (SwiftShader): smaller sampler workgroups. */
  softwareAdapter: boolean;
}

export class ResidentModel {
  readonly served: ServedModel;
  readonly kv: KvCache;
  readonly blocks: KvBlockManager;
  readonly runner: ModelRunner;
  readonly scheduler: Scheduler;
  private lora: LoraPool | null = null;

  private constructor(
    readonly ctx: KernelContext,
    readonly weights: WeightSet,
    files: LoadedModelFiles,
    maxModelLen: number,
    pools: KvPoolPlan,
    dense: DenseKernels,
    private readonly opts: ResidentModelOptions,
  ) {
    const cfg = files.config;
    this.served = {
      id: files.sourceId,
      config: cfg,
      tokenizer: files.tokenizer,
      chatTemplates: files.chatTemplates,
      generation: files.generation,
      eosTokenIds: files.eosTokenIds,
      maxModelLen,
    };
    this.kv = new KvCache(ctx.device, cfg, {
      maxSeqs: opts.maxSeqs,
      maxContext: maxModelLen,
      numBlocks: pools.numBlocks,
      local: pools.local ?? undefined,
      label: `kv.${files.sourceId}`,
    });
    const local = pools.local ? new KvBlockManager(pools.local.numBlocks, 0, pools.local.window) : null;
    this.blocks = new KvBlockManager(this.kv.numBlocks, this.kv.maxSeqs, modelWindow(weights.config), local);
    this.runner = new ModelRunner(ctx, weights, this.kv, {
      dense,
      maxTokens: opts.prefillChunk,
      maxBatch: opts.maxSeqs,
      fusedMaxBatch: opts.fusedMaxBatch,
      decodeGraph: opts.decodeGraph,
      mlpSlice: opts.mlpSlice,
      samplerWorkgroupSize: samplerWorkgroupSize(opts.softwareAdapter),
    });
    this.scheduler = new Scheduler({ runner: this.runner, kv: this.kv, blocks: this.blocks, maxModelLen, lora: () => this.loraPool() });
  }

  /**
   * Uploads the weights tensor by tensor as `files` streams them, then builds the cache and runner.
   * `id` is the catalogue id the model is served under.
   */
  static async load(
    ctx: KernelContext,
    dense: DenseKernels,
    id: string,
    files: LoadedModelFiles,
    opts: ResidentModelOptions,
  ): Promise<ResidentModel> {
    const cfg = files.config;
    const shape = kvShapeOf(cfg);
    const pools = planKvPools(
      cfg,
      { budgetBytes: opts.kvCacheBytes, maxSeqs: opts.maxSeqs, prefillChunk: opts.prefillChunk },
      ctx.device.limits,
    );
    const numBlocks = pools.numBlocks;
    const window = modelWindow(cfg);
    // A windowed sequence holds its window's blocks plus one prefill chunk's (model/kv/block-manager.ts blocksToHold).
    const holdsWindow = window > 0 && numBlocks >= Math.ceil(window / KV_BLOCK) + Math.ceil(opts.prefillChunk / KV_BLOCK) + 1;
    const capacity = holdsWindow ? Infinity : numBlocks * KV_BLOCK;
    const maxModelLen = Math.min(cfg.maxPositionEmbeddings, opts.maxModelLen ?? Infinity, capacity);
    if (maxModelLen < KV_BLOCK) {
      throw new Error(
        `${id}: a KV cache of ${opts.kvCacheBytes} bytes holds ${capacity} tokens at ${kvBytesPerToken(shape)} bytes per token; raise the cache budget`,
      );
    }
    // A model quantized on load gets its blocks made on the GPU from the file's tensors.
    const q = files.quantizeOnLoad;
    const weights = await WeightSet.upload(ctx.device, cfg, q ? q.fileTensors() : files.tensors(), {
      ropePositions: maxModelLen,
      quantize: q ? { dtypes: q.dtypes, writer: new GpuQuantizer(ctx) } : undefined,
    });
    try {
      return new ResidentModel(ctx, weights, { ...files, sourceId: id }, maxModelLen, pools, dense, opts);
    } catch (e) {
      weights.destroy();
      throw e;
    }
  }

  /** The model's LoRA adapter pool, created when the first adapter is served. */
  loraPool(): LoraPool {
    if (!this.lora) {
      this.lora = new LoraPool(this.ctx.device, this.weights.config, { poolBytes: this.opts.loraPoolBytes, maxSlots: 16 });
      this.runner.attachLora(this.lora);
    }
    return this.lora;
  }

  /** GPU bytes: weights, KV cache, step buffers, adapter pool. */
  get gpuBytes(): number {
    return this.weights.gpuBytes + this.kv.bytes + this.runner.bytes + (this.lora?.bytes ?? 0);
  }

  destroy(): void {
    this.runner.destroy();
    this.kv.destroy();
    this.lora?.destroy();
    this.weights.destroy();
  }
}
