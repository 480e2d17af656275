/**
 * Weights of a model on the GPU: `WeightSet` uploads TensorData in file precision
 * (gpu/packed-tensor.ts has the packed layout), GGML block types (Q8_0, Q4_K, ...) as their blocks,
 * dequantized by the kernels that read them. Tensors are checked against the parameter plan
 * (parameter-plan.ts) as they arrive and written where the layout (weight-layout.ts) puts them:
 * matrices that share an input fused row-wise, each part's rows in its own dtype (row segments when
 * they differ: Q4_K q / k beside Q6_K v); the embedding (and an untied lm_head) row-chunked by the
 * device's binding limit.
 * - `vectors`: one f32 buffer of the model's constants, because the fused decode kernels would
 *   otherwise need more storage bindings than devices allow (8 by default). It starts with the RoPE
 *   table (config/rope.ts layout, `ropePositions` positions, so the buffer binds as a rope table from
 *   offset 0), followed by every 1-D tensor decoded to f32 (exact for f16 / bf16, and block types
 *   dequantized as llama.cpp does, quant/dequant.ts): norm weights and biases, the q/k/v biases
 *   back to back and the gate/up biases back to back (Gemma's norms with their + 1 and its softmax
 *   scale in q_norm: vector-values.ts `deviceVector`), then Gemma's second RoPE table for its sliding
 *   layers (`ropeTableOf`). Each group starts on a 256-byte boundary, so it can also be bound on its
 *   own (`vectorBinding`).
 *
 * Not here: file parsing (files/safetensors.ts), the kernels that read these buffers (../kernels).
 */
import { PackedMatrix } from '../../gpu/packed-tensor';
import { dequantizeTensor } from '../quant/dequant';
import type { ModelConfig } from '../config/model-config';
import type { QuantizeTarget } from '../../tensor/dtype';
import { layerRopeParams, ropeTable, rotaryDim } from '../config/rope';
import type { TensorData } from '../../tensor/tensor-data';
import { numel } from '../../tensor/tensor-data';
import { tensorBytes } from '../../tensor/dtype';
import { EMBED_NAME, isIgnorableTensor, LM_HEAD_NAME, planParameters, shapeText } from './parameter-plan';
import { deviceVector } from './vector-values';
import { planLayout, VECTOR_ALIGN, type MatrixPlan } from './weight-layout';

/** One decoder layer on the GPU. Vector fields are element offsets into WeightSet.vectors (f32). */
export interface GpuLayerWeights {
  /** [(NH + 2 NKV) HS, C]: q rows, then k rows, then v rows. */
  qkv: PackedMatrix;
  /** [C, NH HS]. */
  o: PackedMatrix;
  /** [2F, C]: gate rows, then up rows. */
  gateUp: PackedMatrix;
  /** [C, F]. */
  down: PackedMatrix;
  inputNorm: number; // (C,)
  /** The norm before the MLP: post_attention_layernorm, or Gemma's pre_feedforward_layernorm. */
  postNorm: number; // (C,)
  /** Gemma's post_attention_layernorm on the attention output before the residual add. */
  attnOutNorm: number | null; // (C,)
  /** Gemma's post_feedforward_layernorm on the MLP output before the residual add. */
  mlpOutNorm: number | null; // (C,)
  qkvBias: number | null; // ((NH + 2 NKV) HS,) q, k, v biases back to back
  qNorm: number | null; // (HS,)
  kNorm: number | null; // (HS,)
  oBias: number | null; // (C,)
  gateUpBias: number | null; // (2F,)
  downBias: number | null; // (C,)
}

/** Writes a float tensor's rows into a matrix as blocks (quant/quantize-upload.ts GpuQuantizer). */
export interface RowQuantizer {
  writeRows(matrix: PackedMatrix, rowStart: number, t: TensorData, dtype: QuantizeTarget): Promise<void>;
}

export interface WeightSetOptions {
  /**
   * Quantize on load on the GPU: the tensors named in `dtypes` arrive in the file's precision and are
   * written into their matrices as those blocks by `writer`.
   */
  quantize?: { dtypes: ReadonlyMap<string, QuantizeTarget>; writer: RowQuantizer };
  /** Largest chunk of a split tensor in bytes; default: the binding limit (and buffer limit) of the device. */
  chunkBytes?: number;
  /** Positions of the RoPE table: the longest context served (default max_position_embeddings, at most 131072). */
  ropePositions?: number;
}

/**
 * The matrix of `plan` holding `parts` (all of them, checked), each part's rows in its own dtype:
 * parts in different dtypes (llama.cpp's Q4_K_M keeps attn_v in Q6_K beside Q4_K q and k) become row
 * segments of one matrix (gpu/packed-tensor.ts), each kept in its blocks.
 */
async function packMatrix(
  device: GPUDevice,
  plan: MatrixPlan,
  parts: TensorData[],
  chunkBytes: number,
  quantize: WeightSetOptions['quantize'],
): Promise<PackedMatrix> {
  const ordered = plan.parts.map((part, i) => {
    const rows = (plan.parts[i + 1]?.rowStart ?? plan.rows) - part.rowStart;
    const tensor = parts.find((p) => p.name === part.name)!;
    return { part, rows, tensor, target: quantize?.dtypes.get(part.name) };
  });
  const segments = ordered.map((o) => ({ dtype: o.target ?? o.tensor.dtype, rows: o.rows }));
  const m = new PackedMatrix(device, { label: plan.label, dtype: segments, rows: plan.rows, cols: plan.cols, chunkBytes });
  try {
    for (const o of ordered) {
      if (o.target) await quantize!.writer.writeRows(m, o.part.rowStart, o.tensor, o.target);
      else m.writeRows(o.part.rowStart, o.tensor.data);
    }
  } catch (e) {
    m.destroy();
    throw e;
  }
  return m;
}

export class WeightSet {
  readonly embedding: PackedMatrix;
  /** The embedding itself when tie_word_embeddings. */
  readonly lmHead: PackedMatrix;
  readonly finalNorm: number;
  /** Offset of the sliding layers' RoPE table in `vectors` (Gemma), or null. */
  private readonly localRope: number | null;
  readonly layers: GpuLayerWeights[];
  /** The RoPE table, then every 1-D tensor in f32, at the offsets named in the layers (and finalNorm). */
  readonly vectors: GPUBuffer;
  private readonly vectorOffsets: Map<string, number>;
  private readonly matrices: PackedMatrix[];

  private constructor(
    readonly config: ModelConfig,
    readonly ropePositions: number,
    vectors: GPUBuffer,
    matrices: Map<string, PackedMatrix>,
    layout: ReturnType<typeof planLayout>,
  ) {
    this.vectors = vectors;
    this.vectorOffsets = layout.vectorOffsets;
    this.matrices = [...matrices.values()];
    this.embedding = matrices.get(EMBED_NAME)!;
    this.lmHead = config.tieWordEmbeddings ? this.embedding : matrices.get(LM_HEAD_NAME)!;
    this.finalNorm = layout.finalNorm;
    this.localRope = layout.localRope;
    this.layers = layout.layers.map((l) => ({
      ...l,
      qkv: matrices.get(l.qkv)!,
      o: matrices.get(l.o)!,
      gateUp: matrices.get(l.gateUp)!,
      down: matrices.get(l.down)!,
    }));
  }

  /**
   * Validates `tensors` against the config's plan (names, shapes, byte counts) and uploads each as it
   * arrives, so a stream (async iterable) from the loader is never held in memory as a whole (only the
   * parts of one fused matrix wait for each other). A matrix keeps each part in its dtype (packMatrix).
   * On any error every buffer made so far is destroyed (nothing half-loaded).
   */
  static async upload(
    device: GPUDevice,
    config: ModelConfig,
    tensors: Iterable<TensorData> | AsyncIterable<TensorData>,
    opts: WeightSetOptions = {},
  ): Promise<WeightSet> {
    const limit = Math.min(device.limits.maxStorageBufferBindingSize, device.limits.maxBufferSize);
    const chunkBytes = Math.min(opts.chunkBytes ?? limit, limit);
    const ropePositions = opts.ropePositions ?? Math.min(config.maxPositionEmbeddings, 131072);
    if (config.attentionScale !== undefined && !config.qkNorm) {
      throw new Error('WeightSet: a softmax scale other than 1/sqrt(head_dim) is folded into q_norm, and this model has none');
    }
    const layout = planLayout(config, ropePositions);
    const shapes = new Map(planParameters(config).map((p) => [p.name, p.shape]));
    const home = new Map<string, MatrixPlan>();
    for (const plan of layout.matrices) for (const part of plan.parts) home.set(part.name, plan);
    const matrices = new Map<string, PackedMatrix>();
    const pending = new Map<string, TensorData[]>();
    const vectors = device.createBuffer({
      label: 'weights.vectors',
      size: Math.max(16, Math.ceil((layout.vectorLength * 4) / 16) * 16),
      usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC,
    });
    const fail = (message: string): never => {
      throw new Error(`WeightSet: ${message}`);
    };
    try {
      device.queue.writeBuffer(vectors, 0, ropeTable(config, ropePositions));
      if (layout.localRope !== null) {
        const local = config.layerTypes.findIndex((t) => t === 'sliding_attention');
        if (local >= 0) device.queue.writeBuffer(vectors, layout.localRope * 4, ropeTable(layerRopeParams(config, local), ropePositions));
      }
      const seen = new Set<string>();
      for await (const t of tensors as AsyncIterable<TensorData>) {
        const want = shapes.get(t.name);
        if (!want) {
          if (isIgnorableTensor(config, t.name)) continue;
          fail(`unexpected tensor ${t.name} for a ${config.arch} model with this config`);
        }
        if (seen.has(t.name)) fail(`tensor ${t.name} given twice`);
        seen.add(t.name);
        if (t.shape.length !== want!.length || t.shape.some((d, i) => d !== want![i])) {
          fail(`tensor ${t.name}: shape ${shapeText(t.shape)} expected ${shapeText(want!)}`);
        }
        // A block type's rows (or a vector) must be whole blocks: a matrix row of a GGUF file always is.
        const rowBytes = tensorBytes(t.dtype, t.shape[t.shape.length - 1]);
        if (rowBytes === null) {
          fail(`tensor ${t.name}: ${shapeText(t.shape)} ${t.dtype} has rows that are not whole ${t.dtype} blocks`);
        }
        if (t.data.byteLength !== (numel(t.shape) / t.shape[t.shape.length - 1]) * rowBytes!) {
          fail(`tensor ${t.name}: ${t.data.byteLength} bytes for ${shapeText(t.shape)} ${t.dtype}`);
        }
        const offset = layout.vectorOffsets.get(t.name);
        if (offset !== undefined) {
          device.queue.writeBuffer(vectors, offset * 4, deviceVector(config, t.name, dequantizeTensor(t)));
          continue;
        }
        const plan = home.get(t.name)!;
        // A fused matrix is made once all its parts are here (they are next to each other in real
        // files), because its segments' dtypes are theirs.
        const parts = [...(pending.get(plan.label) ?? []), t];
        if (parts.length < plan.parts.length) {
          pending.set(plan.label, parts);
          continue;
        }
        pending.delete(plan.label);
        matrices.set(plan.label, await packMatrix(device, plan, parts, chunkBytes, opts.quantize));
      }
      for (const name of shapes.keys()) if (!seen.has(name)) fail(`missing tensor ${name}`);
      return new WeightSet(config, ropePositions, vectors, matrices, layout);
    } catch (e) {
      for (const m of matrices.values()) m.destroy();
      vectors.destroy();
      throw e;
    }
  }

  /** GPU bytes of all weight buffers (padding included; a tied lm_head counted once). */
  get gpuBytes(): number {
    return this.matrices.reduce((s, m) => s + m.bytes, 0) + this.vectors.size;
  }

  /** The RoPE table (config/rope.ts layout) as a binding: the start of `vectors`. */
  get ropeTable(): GPUBufferBinding {
    return { buffer: this.vectors, offset: 0, size: this.ropePositions * rotaryDim(this.config) * 4 };
  }

  /** The RoPE table layer l rotates with: Gemma's sliding layers have their own (rope_local_base_freq). */
  ropeTableOf(layer: number): GPUBufferBinding {
    const offset = this.ropeOffsetOf(layer);
    if (offset === 0) return this.ropeTable;
    return this.vectorBinding(offset, this.ropePositions * this.config.headDim);
  }

  /** Element offset in `vectors` of layer l's RoPE table: 0, or Gemma's local table on a sliding layer. */
  ropeOffsetOf(layer: number): number {
    if (this.localRope === null || this.config.layerTypes[layer] !== 'sliding_attention') return 0;
    return this.localRope;
  }

  /** A vector group as its own binding (its offset is 256-byte aligned), e.g. q_norm for qkv-prep. */
  vectorBinding(offset: number, length: number): GPUBufferBinding {
    if (offset % VECTOR_ALIGN !== 0) throw new Error(`WeightSet: vector offset ${offset} is not the start of a group`);
    return { buffer: this.vectors, offset: offset * 4, size: Math.ceil(length / 4) * 16 };
  }

  /** Element offset of a 1-D tensor in `vectors`. */
  vectorOffset(name: string): number {
    const o = this.vectorOffsets.get(name);
    if (o === undefined) throw new Error(`WeightSet: ${name} is not a vector of this model`);
    return o;
  }

  destroy(): void {
    for (const m of this.matrices) m.destroy();
    this.vectors.destroy();
  }
}
