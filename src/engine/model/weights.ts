/**
 * Weights of a model on the GPU, and the parameter plan they are checked against.
 *
 * - `planParameters(config)`: every HF tensor name the engine expects, with its shape, in a fixed
 *   order (STYLE.md "For Hearth" 3). WeightSet validates uploads against it, the reference forward
 *   reads by these names, and the loader can check a repository before any upload
 *   (`checkAgainstPlan`).
 * - `WeightSet`: uploads TensorData in file precision (gpu/packed-tensor.ts has the packed layout), GGML
 *   block types (Q8_0, Q4_K, ...) as their blocks, dequantized by the kernels that read them.
 *   Matrices that share an input are fused row-wise so one GEMM / GEMV reads them in one binding:
 *   qkv = [q; k; v] rows, gateUp = [gate; up] rows, each part's rows in its own dtype (row segments
 *   when they differ: Q4_K q / k beside Q6_K v). The embedding (and an untied lm_head) is row-chunked
 *   by the device's binding limit.
 * - `vectors`: one f32 buffer of the model's constants, because the fused decode kernels would
 *   otherwise need more storage bindings than devices allow (8 by default). It starts with the RoPE
 *   table (model/rope.ts layout, `ropePositions` positions, so the buffer binds as a rope table from
 *   offset 0), followed by every 1-D tensor decoded to f32 (exact for f16 / bf16, and block types
 *   dequantized as llama.cpp does, reference/dequant.ts): norm weights and biases, the q/k/v biases
 *   back to back and the gate/up biases back to back (Gemma's norms with their + 1 and its softmax
 *   scale in q_norm: `deviceVector`), then Gemma's second RoPE table for its sliding layers
 *   (`ropeTableOf`). Each group starts on a 256-byte boundary, so it can also be bound on its own
 *   (`vectorBinding`).
 *
 * Not here: file parsing (safetensors.ts), the kernels that read these buffers (../kernels).
 */
import { PackedMatrix } from '../gpu/packed-tensor';
import { dequantizeTensor } from './quant/dequant';
import type { ModelConfig } from './config/model-config';
import type { QuantizeTarget } from './quant/quantize';
import { layerRopeParams, ropeTable, rotaryDim } from './config/rope';
import type { TensorData } from '../tensor/tensor-data';
import { numel } from '../tensor/tensor-data';
import { tensorBytes } from '../tensor/dtype';

export interface ParameterSpec {
  /** HF name, e.g. model.layers.3.mlp.up_proj.weight. */
  name: string;
  /** Expected shape, outermost first ([out, in] for a Linear weight). */
  shape: number[];
}

/** Names of one decoder layer's tensors (the prefix is model.layers.<l>). */
export function layerNames(l: number) {
  const p = `model.layers.${l}`;
  return {
    inputNorm: `${p}.input_layernorm.weight`,
    q: `${p}.self_attn.q_proj.weight`,
    k: `${p}.self_attn.k_proj.weight`,
    v: `${p}.self_attn.v_proj.weight`,
    /** Phi-3's fused [q; k; v] rows (config.fusedProjections), in place of q, k, v. */
    qkv: `${p}.self_attn.qkv_proj.weight`,
    qBias: `${p}.self_attn.q_proj.bias`,
    kBias: `${p}.self_attn.k_proj.bias`,
    vBias: `${p}.self_attn.v_proj.bias`,
    qNorm: `${p}.self_attn.q_norm.weight`,
    kNorm: `${p}.self_attn.k_norm.weight`,
    o: `${p}.self_attn.o_proj.weight`,
    oBias: `${p}.self_attn.o_proj.bias`,
    postNorm: `${p}.post_attention_layernorm.weight`,
    // Gemma 3's sandwich norms (its post_attention_layernorm normalises the attention output instead).
    preFfnNorm: `${p}.pre_feedforward_layernorm.weight`,
    postFfnNorm: `${p}.post_feedforward_layernorm.weight`,
    gate: `${p}.mlp.gate_proj.weight`,
    up: `${p}.mlp.up_proj.weight`,
    /** Phi-3's fused [gate; up] rows (modeling_phi3.py Phi3MLP: gate is the first half), in place of gate, up. */
    gateUp: `${p}.mlp.gate_up_proj.weight`,
    down: `${p}.mlp.down_proj.weight`,
    gateBias: `${p}.mlp.gate_proj.bias`,
    upBias: `${p}.mlp.up_proj.bias`,
    downBias: `${p}.mlp.down_proj.bias`,
  };
}

export const EMBED_NAME = 'model.embed_tokens.weight';
export const FINAL_NORM_NAME = 'model.norm.weight';
export const LM_HEAD_NAME = 'lm_head.weight';

/** Every tensor the model needs, in file order of a typical HF checkpoint. */
export function planParameters(cfg: ModelConfig): ParameterSpec[] {
  const C = cfg.hiddenSize;
  const HS = cfg.headDim;
  const qRows = cfg.numHeads * HS;
  const kvRows = cfg.numKvHeads * HS;
  const F = cfg.intermediateSize;
  const plan: ParameterSpec[] = [{ name: EMBED_NAME, shape: [cfg.vocabSize, C] }];
  for (let l = 0; l < cfg.numLayers; l++) {
    const n = layerNames(l);
    plan.push({ name: n.inputNorm, shape: [C] });
    if (cfg.fusedProjections) plan.push({ name: n.qkv, shape: [qRows + 2 * kvRows, C] });
    else plan.push({ name: n.q, shape: [qRows, C] }, { name: n.k, shape: [kvRows, C] }, { name: n.v, shape: [kvRows, C] });
    if (cfg.attentionBias) {
      plan.push({ name: n.qBias, shape: [qRows] }, { name: n.kBias, shape: [kvRows] }, { name: n.vBias, shape: [kvRows] });
    }
    if (cfg.qkNorm) plan.push({ name: n.qNorm, shape: [HS] }, { name: n.kNorm, shape: [HS] });
    plan.push({ name: n.o, shape: [C, qRows] });
    if (cfg.outputBias) plan.push({ name: n.oBias, shape: [C] });
    plan.push({ name: n.postNorm, shape: [C] });
    if (cfg.sandwichNorms) plan.push({ name: n.preFfnNorm, shape: [C] });
    if (cfg.fusedProjections) plan.push({ name: n.gateUp, shape: [2 * F, C] });
    else plan.push({ name: n.gate, shape: [F, C] }, { name: n.up, shape: [F, C] });
    plan.push({ name: n.down, shape: [C, F] });
    if (cfg.mlpBias) plan.push({ name: n.gateBias, shape: [F] }, { name: n.upBias, shape: [F] }, { name: n.downBias, shape: [C] });
    if (cfg.sandwichNorms) plan.push({ name: n.postFfnNorm, shape: [C] });
  }
  plan.push({ name: FINAL_NORM_NAME, shape: [C] });
  if (!cfg.tieWordEmbeddings) plan.push({ name: LM_HEAD_NAME, shape: [cfg.vocabSize, C] });
  return plan;
}

/**
 * The engine's name of a checkpoint tensor, or null for a tensor of a part the engine does not run.
 * A multimodal Gemma 3 checkpoint (Gemma3ForConditionalGeneration) keeps the text model under
 * `language_model.` (transformers < 4.52: language_model.model.layers.0...) or `model.language_model.`
 * (later: model.language_model.layers.0...) beside `vision_tower` and `multi_modal_projector`.
 */
export function checkpointTensorName(cfg: ModelConfig, name: string): string | null {
  if (!cfg.multimodalCheckpoint) return name;
  if (name.startsWith('language_model.')) return name.slice('language_model.'.length);
  if (name.startsWith('model.language_model.')) return `model.${name.slice('model.language_model.'.length)}`;
  if (/^(model\.)?(vision_tower|multi_modal_projector)\./.test(name)) return null;
  return name;
}

/**
 * A 1-D tensor as the kernels read it from `vectors`: Gemma's norms are x * (1 + w), so the offset is
 * added here once (in f32, as Gemma3RMSNorm computes 1.0 + weight.float()); and Gemma's softmax scale
 * query_pre_attn_scalar^-1/2 is folded into q_norm, times sqrt(HS) that the attention kernels apply
 * as 1/sqrt(HS): q_norm's output is the only input of q, RoPE is linear, so the scores are exact.
 */
export function deviceVector(cfg: ModelConfig, name: string, values: Float32Array): Float32Array {
  const isNorm = name.endsWith('norm.weight');
  const offset = isNorm ? (cfg.normWeightOffset ?? 0) : 0;
  const scale =
    name.endsWith('self_attn.q_norm.weight') && cfg.attentionScale !== undefined ? cfg.attentionScale * Math.sqrt(cfg.headDim) : 1;
  if (offset === 0 && scale === 1) return values;
  return values.map((w) => Math.fround(Math.fround(offset + w) * scale));
}

/**
 * Gemma's embedding normaliser, sqrt(hidden_size) in f32 (1 without one). transformers multiplies by
 * embed_scale.to(weight.dtype): the weights' dtype as the model runs, which is f32 when it runs in
 * f32 (torch_dtype=float32, whatever the file's dtype), and llama.cpp scales by sqrtf(n_embd). Hearth
 * computes in f32 from any file dtype, so it is f32 here too; rounding it to the file's bf16 (25.25
 * for sqrt(640) = 25.298) moved every logprob by up to 1.4e-2 nats (issue 21).
 */
export function embeddingScaleOf(cfg: Pick<ModelConfig, 'embeddingScale'>): number {
  return cfg.embeddingScale === undefined ? 1 : Math.fround(cfg.embeddingScale);
}

/**
 * Tensors a checkpoint may carry that the engine does not use: old Llama checkpoints save the rotary
 * inv_freq buffer, and some tied checkpoints also save lm_head (a copy of the embedding).
 */
export function isIgnorableTensor(cfg: ModelConfig, name: string): boolean {
  if (/^model\.layers\.\d+\.self_attn\.rotary_emb\.inv_freq$/.test(name)) return true;
  return cfg.tieWordEmbeddings && name === LM_HEAD_NAME;
}

export function shapeText(shape: readonly number[]): string {
  return `[${shape.join(', ')}]`;
}

/**
 * Checks a set of tensors against the plan. Returns the first problem as a sentence ("missing tensor
 * ...", "tensor ...: shape [..] expected [..]", "unexpected tensor ..."), or null when all is well.
 */
export function checkAgainstPlan(cfg: ModelConfig, tensors: Iterable<Pick<TensorData, 'name' | 'shape'>>): string | null {
  const plan = new Map(planParameters(cfg).map((p) => [p.name, p.shape]));
  const seen = new Set<string>();
  for (const t of tensors) {
    const want = plan.get(t.name);
    if (!want) {
      if (isIgnorableTensor(cfg, t.name)) continue;
      return `unexpected tensor ${t.name} for a ${cfg.arch} model with this config`;
    }
    if (seen.has(t.name)) return `tensor ${t.name} given twice`;
    seen.add(t.name);
    if (t.shape.length !== want.length || t.shape.some((d, i) => d !== want[i])) {
      return `tensor ${t.name}: shape ${shapeText(t.shape)} expected ${shapeText(want)}`;
    }
  }
  for (const name of plan.keys()) if (!seen.has(name)) return `missing tensor ${name}`;
  return null;
}

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

/** Writes a float tensor's rows into a matrix as blocks (model/quantize-upload.ts GpuQuantizer). */
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

/** Elements (f32) a vector group is aligned to: 256 bytes, the storage binding offset alignment. */
const VECTOR_ALIGN = 64;

/** A matrix of the set: its label, shape, and the HF tensors stored in it as row ranges. */
interface MatrixPlan {
  label: string;
  rows: number;
  cols: number;
  parts: Array<{ name: string; rowStart: number }>;
}

/**
 * Where each matrix and vector goes, from the config alone: so tensors can be written as they arrive,
 * one at a time (the loader streams them), and a matrix is created when its parts tell its dtype.
 */
function planLayout(cfg: ModelConfig, ropePositions: number) {
  const C = cfg.hiddenSize;
  const HS = cfg.headDim;
  const qRows = cfg.numHeads * HS;
  const kvRows = cfg.numKvHeads * HS;
  const F = cfg.intermediateSize;
  const matrices: MatrixPlan[] = [];
  const matrix = (label: string, rows: number, cols: number, parts: Array<[string, number]>) => {
    matrices.push({ label, rows, cols, parts: parts.map(([name, rowStart]) => ({ name, rowStart })) });
    return label;
  };
  const vectorOffsets = new Map<string, number>();
  let vectorLength = ropePositions * rotaryDim(cfg); // the RoPE table comes first
  // A group of 1-D tensors stored back to back, starting on a 256-byte boundary.
  const vector = (names: string[], lengths: number[], present: boolean) => {
    if (!present) return null;
    vectorLength = Math.ceil(vectorLength / VECTOR_ALIGN) * VECTOR_ALIGN;
    const start = vectorLength;
    names.forEach((name, i) => {
      vectorOffsets.set(name, vectorLength);
      vectorLength += lengths[i];
    });
    return start;
  };
  matrix(EMBED_NAME, cfg.vocabSize, C, [[EMBED_NAME, 0]]);
  if (!cfg.tieWordEmbeddings) matrix(LM_HEAD_NAME, cfg.vocabSize, C, [[LM_HEAD_NAME, 0]]);
  const layers = Array.from({ length: cfg.numLayers }, (_, l) => {
    const n = layerNames(l);
    return {
      // A fused checkpoint (Phi-3) already holds these row blocks in one tensor each.
      qkv: matrix(
        `model.layers.${l}.qkv`,
        qRows + 2 * kvRows,
        C,
        cfg.fusedProjections
          ? [[n.qkv, 0]]
          : [
              [n.q, 0],
              [n.k, qRows],
              [n.v, qRows + kvRows],
            ],
      ),
      o: matrix(n.o, C, qRows, [[n.o, 0]]),
      gateUp: matrix(
        `model.layers.${l}.gate_up`,
        2 * F,
        C,
        cfg.fusedProjections
          ? [[n.gateUp, 0]]
          : [
              [n.gate, 0],
              [n.up, F],
            ],
      ),
      down: matrix(n.down, C, F, [[n.down, 0]]),
      inputNorm: vector([n.inputNorm], [C], true)!,
      postNorm: vector([cfg.sandwichNorms ? n.preFfnNorm : n.postNorm], [C], true)!,
      attnOutNorm: vector([n.postNorm], [C], !!cfg.sandwichNorms),
      mlpOutNorm: vector([n.postFfnNorm], [C], !!cfg.sandwichNorms),
      // Fused biases: [q; k; v] and [gate; up] read as one vector each.
      qkvBias: vector([n.qBias, n.kBias, n.vBias], [qRows, kvRows, kvRows], cfg.attentionBias),
      qNorm: vector([n.qNorm], [HS], cfg.qkNorm),
      kNorm: vector([n.kNorm], [HS], cfg.qkNorm),
      oBias: vector([n.oBias], [C], cfg.outputBias),
      gateUpBias: vector([n.gateBias, n.upBias], [F, F], cfg.mlpBias),
      downBias: vector([n.downBias], [C], cfg.mlpBias),
    };
  });
  const finalNorm = vector([FINAL_NORM_NAME], [C], true)!;
  // Gemma's sliding layers rotate with their own base: a second table, after the 1-D tensors.
  const localRope = vector(['rope.local'], [ropePositions * HS], cfg.ropeLocalTheta !== undefined);
  return { matrices, layers, finalNorm, localRope, vectorOffsets, vectorLength };
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

  /** The RoPE table (model/rope.ts layout) as a binding: the start of `vectors`. */
  get ropeTable(): GPUBufferBinding {
    return { buffer: this.vectors, offset: 0, size: this.ropePositions * rotaryDim(this.config) * 4 };
  }

  /** The RoPE table layer l rotates with: Gemma's sliding layers have their own (rope_local_base_freq). */
  ropeTableOf(layer: number): GPUBufferBinding {
    if (this.localRope === null || this.config.layerTypes[layer] !== 'sliding_attention') return this.ropeTable;
    return this.vectorBinding(this.localRope, this.ropePositions * this.config.headDim);
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
