/**
 * Weights of a model on the GPU, and the parameter plan they are checked against.
 *
 * - `planParameters(config)`: every HF tensor name the engine expects, with its shape, in a fixed
 *   order (STYLE.md "For Hearth" 3). WeightSet validates uploads against it, the reference forward
 *   reads by these names, and the loader can check a repository before any upload
 *   (`checkAgainstPlan`).
 * - `WeightSet`: uploads TensorData in file precision (gpu/packed-tensor.ts has the packed layout).
 *   Matrices that share an input are fused row-wise so one GEMM / GEMV reads them in one binding:
 *   qkv = [q; k; v] rows, gateUp = [gate; up] rows. The embedding (and an untied lm_head) is
 *   row-chunked by the device's binding limit.
 * - `vectors`: one f32 buffer of the model's constants, because the fused decode kernels would
 *   otherwise need more storage bindings than devices allow (8 by default). It starts with the RoPE
 *   table (model/rope.ts layout, `ropePositions` positions, so the buffer binds as a rope table from
 *   offset 0), followed by every 1-D tensor decoded to f32 (exact for f16 / bf16): norm weights and
 *   biases, the q/k/v biases back to back and the gate/up biases back to back. Each group starts on a
 *   256-byte boundary, so it can also be bound on its own (`vectorBinding`).
 *
 * Not here: file parsing (safetensors.ts), the kernels that read these buffers (../kernels).
 */
import { PackedMatrix } from '../gpu/packed-tensor';
import type { DType, ModelConfig } from './config';
import { decodeToF32 } from './dtype';
import { ropeTable } from './rope';
import type { TensorData } from './tensor';
import { bytesPerElement, numel } from './tensor';

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
    qBias: `${p}.self_attn.q_proj.bias`,
    kBias: `${p}.self_attn.k_proj.bias`,
    vBias: `${p}.self_attn.v_proj.bias`,
    qNorm: `${p}.self_attn.q_norm.weight`,
    kNorm: `${p}.self_attn.k_norm.weight`,
    o: `${p}.self_attn.o_proj.weight`,
    oBias: `${p}.self_attn.o_proj.bias`,
    postNorm: `${p}.post_attention_layernorm.weight`,
    gate: `${p}.mlp.gate_proj.weight`,
    up: `${p}.mlp.up_proj.weight`,
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
    plan.push({ name: n.q, shape: [qRows, C] }, { name: n.k, shape: [kvRows, C] }, { name: n.v, shape: [kvRows, C] });
    if (cfg.attentionBias) {
      plan.push({ name: n.qBias, shape: [qRows] }, { name: n.kBias, shape: [kvRows] }, { name: n.vBias, shape: [kvRows] });
    }
    if (cfg.qkNorm) plan.push({ name: n.qNorm, shape: [HS] }, { name: n.kNorm, shape: [HS] });
    plan.push({ name: n.o, shape: [C, qRows] });
    if (cfg.outputBias) plan.push({ name: n.oBias, shape: [C] });
    plan.push({ name: n.postNorm, shape: [C] });
    plan.push({ name: n.gate, shape: [F, C] }, { name: n.up, shape: [F, C] }, { name: n.down, shape: [C, F] });
    if (cfg.mlpBias) plan.push({ name: n.gateBias, shape: [F] }, { name: n.upBias, shape: [F] }, { name: n.downBias, shape: [C] });
  }
  plan.push({ name: FINAL_NORM_NAME, shape: [C] });
  if (!cfg.tieWordEmbeddings) plan.push({ name: LM_HEAD_NAME, shape: [cfg.vocabSize, C] });
  return plan;
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
  postNorm: number; // (C,)
  qkvBias: number | null; // ((NH + 2 NKV) HS,) q, k, v biases back to back
  qNorm: number | null; // (HS,)
  kNorm: number | null; // (HS,)
  oBias: number | null; // (C,)
  gateUpBias: number | null; // (2F,)
  downBias: number | null; // (C,)
}

export interface WeightSetOptions {
  /** Largest chunk of a split tensor in bytes; default: the binding limit (and buffer limit) of the device. */
  chunkBytes?: number;
  /** Positions of the RoPE table: the longest context served (default max_position_embeddings, at most 131072). */
  ropePositions?: number;
}

/** Elements (f32) a vector group is aligned to: 256 bytes, the storage binding offset alignment. */
const VECTOR_ALIGN = 64;

/** Where each HF tensor lands: a row range of a packed matrix, or an offset into the vectors buffer. */
type Slot = { kind: 'rows'; matrix: PackedMatrix; rowStart: number } | { kind: 'vector'; offset: number };

export class WeightSet {
  readonly embedding: PackedMatrix;
  /** The embedding itself when tie_word_embeddings. */
  readonly lmHead: PackedMatrix;
  readonly finalNorm: number;
  readonly layers: GpuLayerWeights[] = [];
  /** Every 1-D tensor in f32, at the offsets named in the layers (and finalNorm). */
  readonly vectors: GPUBuffer;
  private readonly vectorOffsets = new Map<string, number>();
  private readonly matrices: PackedMatrix[] = [];
  private readonly device: GPUDevice;

  private constructor(
    readonly config: ModelConfig,
    device: GPUDevice,
    dtypes: Map<string, DType>,
    chunkBytes: number,
    readonly ropePositions: number,
  ) {
    const cfg = config;
    const C = cfg.hiddenSize;
    const HS = cfg.headDim;
    const qRows = cfg.numHeads * HS;
    const kvRows = cfg.numKvHeads * HS;
    const F = cfg.intermediateSize;
    const matrix = (label: string, rows: number, cols: number, dtype: DType) => {
      const m = new PackedMatrix(device, { label, dtype, rows, cols, chunkBytes });
      this.matrices.push(m);
      return m;
    };
    // One dtype per fused matrix: the parts must agree (mixed-precision q/k/v do not occur in practice).
    const fusedDtype = (names: string[]) => {
      const ds = new Set(names.map((n) => dtypes.get(n)!));
      if (ds.size > 1) throw new Error(`${names.join(', ')} have different dtypes (${[...ds].join(', ')}): cannot fuse them`);
      return dtypes.get(names[0])!;
    };
    const rope = ropeTable(cfg, ropePositions);
    let vectorLength = rope.length;
    // A group of 1-D tensors stored back to back, starting on a 256-byte boundary.
    const vector = (names: string[], lengths: number[], present: boolean) => {
      if (!present) return null;
      vectorLength = Math.ceil(vectorLength / VECTOR_ALIGN) * VECTOR_ALIGN;
      const start = vectorLength;
      names.forEach((name, i) => {
        this.vectorOffsets.set(name, vectorLength);
        vectorLength += lengths[i];
      });
      return start;
    };
    this.embedding = matrix(EMBED_NAME, cfg.vocabSize, C, dtypes.get(EMBED_NAME)!);
    this.lmHead = cfg.tieWordEmbeddings ? this.embedding : matrix(LM_HEAD_NAME, cfg.vocabSize, C, dtypes.get(LM_HEAD_NAME)!);
    for (let l = 0; l < cfg.numLayers; l++) {
      const n = layerNames(l);
      const layer: GpuLayerWeights = {
        qkv: matrix(`model.layers.${l}.qkv`, qRows + 2 * kvRows, C, fusedDtype([n.q, n.k, n.v])),
        o: matrix(n.o, C, qRows, dtypes.get(n.o)!),
        gateUp: matrix(`model.layers.${l}.gate_up`, 2 * F, C, fusedDtype([n.gate, n.up])),
        down: matrix(n.down, C, F, dtypes.get(n.down)!),
        inputNorm: vector([n.inputNorm], [C], true)!,
        postNorm: vector([n.postNorm], [C], true)!,
        // Fused biases: [q; k; v] and [gate; up] read as one vector each.
        qkvBias: vector([n.qBias, n.kBias, n.vBias], [qRows, kvRows, kvRows], cfg.attentionBias),
        qNorm: vector([n.qNorm], [HS], cfg.qkNorm),
        kNorm: vector([n.kNorm], [HS], cfg.qkNorm),
        oBias: vector([n.oBias], [C], cfg.outputBias),
        gateUpBias: vector([n.gateBias, n.upBias], [F, F], cfg.mlpBias),
        downBias: vector([n.downBias], [C], cfg.mlpBias),
      };
      this.layers.push(layer);
    }
    this.finalNorm = vector([FINAL_NORM_NAME], [C], true)!;
    this.vectors = device.createBuffer({
      label: 'weights.vectors',
      size: Math.max(16, Math.ceil((vectorLength * 4) / 16) * 16),
      usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC,
    });
    device.queue.writeBuffer(this.vectors, 0, rope);
    this.device = device;
  }

  /**
   * Validates `tensors` against the config's plan (names, shapes, byte counts) and uploads them.
   * Accepts a stream (async iterable) so the loader can hand tensors over one by one; on any error
   * every buffer made so far is destroyed and nothing is returned (nothing half-loaded).
   */
  static async upload(
    device: GPUDevice,
    config: ModelConfig,
    tensors: Iterable<TensorData> | AsyncIterable<TensorData>,
    opts: WeightSetOptions = {},
  ): Promise<WeightSet> {
    // Buffers are sized before the bytes arrive, so dtypes must be known first: collect the stream
    // (references to the loader's bytes, not copies), validate it, then write.
    const list: TensorData[] = [];
    for await (const t of tensors as AsyncIterable<TensorData>) list.push(t);
    const problem = checkAgainstPlan(config, list);
    if (problem) throw new Error(`WeightSet: ${problem}`);
    for (const t of list) {
      if (t.data.byteLength !== numel(t.shape) * bytesPerElement(t.dtype)) {
        throw new Error(`WeightSet: tensor ${t.name}: ${t.data.byteLength} bytes for ${shapeText(t.shape)} ${t.dtype}`);
      }
    }
    const planned = new Set(planParameters(config).map((p) => p.name));
    const used = list.filter((t) => planned.has(t.name));
    const dtypes = new Map(used.map((t) => [t.name, t.dtype]));
    const limit = Math.min(device.limits.maxStorageBufferBindingSize, device.limits.maxBufferSize);
    const chunkBytes = Math.min(opts.chunkBytes ?? limit, limit);
    const ropePositions = opts.ropePositions ?? Math.min(config.maxPositionEmbeddings, 131072);
    let set: WeightSet | null = null;
    try {
      set = new WeightSet(config, device, dtypes, chunkBytes, ropePositions);
      for (const t of used) set.write(t);
      return set;
    } catch (e) {
      set?.destroy();
      throw e;
    }
  }

  /** GPU bytes of all weight buffers (padding included; a tied lm_head counted once). */
  get gpuBytes(): number {
    return this.matrices.reduce((s, m) => s + m.bytes, 0) + this.vectors.size;
  }

  /** The RoPE table (model/rope.ts layout) as a binding: the start of `vectors`. */
  get ropeTable(): GPUBufferBinding {
    return { buffer: this.vectors, offset: 0, size: this.ropePositions * this.config.headDim * 4 };
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

  private slot(name: string): Slot {
    const off = this.vectorOffsets.get(name);
    if (off !== undefined) return { kind: 'vector', offset: off };
    if (name === EMBED_NAME) return { kind: 'rows', matrix: this.embedding, rowStart: 0 };
    if (name === LM_HEAD_NAME) return { kind: 'rows', matrix: this.lmHead, rowStart: 0 };
    const m = /^model\.layers\.(\d+)\./.exec(name);
    if (m) {
      const l = Number(m[1]);
      const n = layerNames(l);
      const w = this.layers[l];
      const qRows = this.config.numHeads * this.config.headDim;
      const kvRows = this.config.numKvHeads * this.config.headDim;
      const F = this.config.intermediateSize;
      const rows: Record<string, [PackedMatrix, number]> = {
        [n.q]: [w.qkv, 0],
        [n.k]: [w.qkv, qRows],
        [n.v]: [w.qkv, qRows + kvRows],
        [n.o]: [w.o, 0],
        [n.gate]: [w.gateUp, 0],
        [n.up]: [w.gateUp, F],
        [n.down]: [w.down, 0],
      };
      const r = rows[name];
      if (r) return { kind: 'rows', matrix: r[0], rowStart: r[1] };
    }
    throw new Error(`WeightSet: no place for ${name}`);
  }

  private write(t: TensorData): void {
    const s = this.slot(t.name);
    if (s.kind === 'vector') {
      this.device.queue.writeBuffer(this.vectors, s.offset * 4, decodeToF32(t.data, t.dtype));
    } else {
      if (t.dtype !== s.matrix.dtype) throw new Error(`WeightSet: ${t.name} is ${t.dtype}, its fused matrix ${s.matrix.label} ${s.matrix.dtype}`);
      s.matrix.writeRows(s.rowStart, t.data);
    }
  }
}
