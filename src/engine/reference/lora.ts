/**
 * LoRA, reference: the low-rank update of a Linear layer, y += s * (x A^T) B^T, with A [r, in] and
 * B [out, r] in PEFT's layout and s = alpha / r (alpha / sqrt(r) with rsLoRA), plus reading a PEFT
 * adapter (adapter_model.safetensors key names) into per-layer f32 matrices for the reference model.
 * Plain loops, f64 accumulation: the oracle of the GPU LoRA kernels, of the engine's adapter
 * batches and (with `loraBackward`) of the trainer.
 *
 * Not here: GPU residency of adapters (generate/lora-pool.ts), the whole-model training pass
 * (model-train.ts).
 */
import type { ModelConfig } from '../model/config/model-config';
import { tensorFromF32, tensorToF32 } from '../tensor/tensor-data';
import type { DType } from '../tensor/dtype';
import type { TensorData } from '../tensor/tensor-data';
import type { Floats } from './floats';
import { Rng } from '../tensor/random';

/**
 * The projections of a decoder layer, in PEFT's names and the order the engine stores them: the
 * separate q/k/v and gate/up of most families, and the fused `qkv_proj` / `gate_up_proj` Linears of
 * checkpoints that store them fused (Phi-3, modeling_phi3.py), where PEFT adapts the fused module
 * with one A and one B over all its rows. A model has one set or the other (`loraModulesOf`).
 */
export const LORA_MODULES = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'] as const;
export const FUSED_LORA_MODULES = ['qkv_proj', 'gate_up_proj'] as const;
export type LoraModule = (typeof LORA_MODULES)[number] | (typeof FUSED_LORA_MODULES)[number];
/** Every module name of either layout. */
export const ALL_LORA_MODULES: readonly LoraModule[] = [...LORA_MODULES, ...FUSED_LORA_MODULES];

const FUSED_MODULES: readonly LoraModule[] = ['qkv_proj', 'o_proj', 'gate_up_proj', 'down_proj'];

/** The modules a LoRA can adapt in this model, in storage order. */
export function loraModulesOf(cfg: Pick<ModelConfig, 'fusedProjections'>): readonly LoraModule[] {
  return cfg.fusedProjections ? FUSED_MODULES : LORA_MODULES;
}

/** Throws unless every target is a module of this model (naming the model's modules). */
export function checkLoraTargets(cfg: Pick<ModelConfig, 'fusedProjections' | 'arch'>, targets: readonly string[]): void {
  const valid = loraModulesOf(cfg);
  const unknown = targets.filter((m) => !(valid as readonly string[]).includes(m));
  if (unknown.length) {
    throw new Error(`LoRA: target modules ${unknown.join(', ')} are not projections of this ${cfg.arch} model (${valid.join(', ')})`);
  }
}

const MODULE_PATHS: Record<LoraModule, string> = {
  q_proj: 'self_attn.q_proj',
  k_proj: 'self_attn.k_proj',
  v_proj: 'self_attn.v_proj',
  o_proj: 'self_attn.o_proj',
  gate_proj: 'mlp.gate_proj',
  up_proj: 'mlp.up_proj',
  down_proj: 'mlp.down_proj',
  qkv_proj: 'self_attn.qkv_proj',
  gate_up_proj: 'mlp.gate_up_proj',
};

/** One adapted module: A (r, in) and B (out, r). */
export interface LoraModuleWeights {
  A: Floats;
  B: Floats;
}

/**
 * An adapter over a whole model: rank, scale and the adapted modules of each layer. Gradients of an
 * adapter have the same shape (`zerosLike`), so the reference backward accumulates into one.
 */
export class ReferenceLora {
  private readonly modules = new Map<string, LoraModuleWeights>();

  constructor(
    readonly rank: number,
    readonly scale: number,
  ) {}

  /** The module's A and B in layer l, or undefined when the adapter does not target it there. */
  get(layer: number, module: LoraModule): LoraModuleWeights | undefined {
    return this.modules.get(`${layer}.${module}`);
  }

  set(layer: number, module: LoraModule, weights: LoraModuleWeights): void {
    this.modules.set(`${layer}.${module}`, weights);
  }

  /** Every adapted (layer, module) with its weights. */
  *entries(): IterableIterator<{ layer: number; module: LoraModule; weights: LoraModuleWeights }> {
    for (const [key, weights] of this.modules) {
      const [l, module] = key.split('.');
      yield { layer: Number(l), module: module as LoraModule, weights };
    }
  }

  /** Zeros of the same shape (a gradient accumulator), in f32 or f64. */
  zerosLike(precision: 'f32' | 'f64' = 'f32'): ReferenceLora {
    const out = new ReferenceLora(this.rank, this.scale);
    const make = (n: number) => (precision === 'f64' ? new Float64Array(n) : new Float32Array(n));
    for (const { layer, module, weights } of this.entries())
      out.set(layer, module, { A: make(weights.A.length), B: make(weights.B.length) });
    return out;
  }
}

/** s = alpha / r, or alpha / sqrt(r) with rsLoRA (PEFT `use_rslora`). */
export function loraScale(alpha: number, rank: number, useRslora: boolean): number {
  return useRslora ? alpha / Math.sqrt(rank) : alpha / rank;
}

/** Input and output widths of a module for a config. */
export function loraModuleDims(cfg: ModelConfig, module: LoraModule): { in: number; out: number } {
  const C = cfg.hiddenSize;
  const q = cfg.numHeads * cfg.headDim;
  const kv = cfg.numKvHeads * cfg.headDim;
  const F = cfg.intermediateSize;
  switch (module) {
    case 'q_proj':
      return { in: C, out: q };
    case 'k_proj':
    case 'v_proj':
      return { in: C, out: kv };
    case 'o_proj':
      return { in: q, out: C };
    case 'gate_proj':
    case 'up_proj':
      return { in: C, out: F };
    case 'down_proj':
      return { in: F, out: C };
    case 'qkv_proj':
      return { in: C, out: q + 2 * kv };
    case 'gate_up_proj':
      return { in: C, out: 2 * F };
  }
}

/** PEFT's key of a LoRA matrix: base_model.model.model.layers.<l>.self_attn.q_proj.lora_A.weight. */
export function loraTensorName(layer: number, module: LoraModule, which: 'A' | 'B'): string {
  return `base_model.model.model.layers.${layer}.${MODULE_PATHS[module]}.lora_${which}.weight`;
}

// The text model of a multimodal Gemma 3 (Gemma3ForConditionalGeneration) sits at model.language_model.layers
// (transformers >= 4.52) or language_model.model.layers in PEFT's keys.
const KEY =
  /^(?:base_model\.model\.)?(?:model\.language_model\.|language_model\.model\.|model\.)layers\.(\d+)\.(self_attn|mlp)\.(\w+)\.lora_([AB])(?:\.[\w-]+)?\.weight$/;

/** The (layer, module, A|B) a PEFT key names, or null for a key that is not a LoRA matrix. */
export function parseLoraTensorName(name: string): { layer: number; module: LoraModule; which: 'A' | 'B' } | null {
  const m = KEY.exec(name);
  if (!m) return null;
  const module = m[3] as LoraModule;
  if (!(ALL_LORA_MODULES as readonly string[]).includes(module) || MODULE_PATHS[module] !== `${m[2]}.${module}`) return null;
  return { layer: Number(m[1]), module, which: m[4] as 'A' | 'B' };
}

/**
 * Checks a PEFT adapter's tensors against a config and rank and returns them by (layer, module):
 * every A is [r, in], every B [out, r], each module has both or neither. Throws naming the tensor.
 */
export function groupLoraTensors(
  cfg: ModelConfig,
  rank: number,
  tensors: Iterable<TensorData>,
): Map<string, { A: TensorData; B: TensorData }> {
  const found = new Map<string, { A?: TensorData; B?: TensorData }>();
  for (const t of tensors) {
    const key = parseLoraTensorName(t.name);
    if (!key) throw new Error(`LoRA adapter: unexpected tensor ${t.name}`);
    if (key.layer >= cfg.numLayers) throw new Error(`LoRA adapter: ${t.name} names layer ${key.layer}, the model has ${cfg.numLayers}`);
    if (!loraModulesOf(cfg).includes(key.module)) {
      throw new Error(
        `LoRA adapter: ${t.name} adapts ${key.module}, which this ${cfg.arch} model does not have (${loraModulesOf(cfg).join(', ')})`,
      );
    }
    const d = loraModuleDims(cfg, key.module);
    const want = key.which === 'A' ? [rank, d.in] : [d.out, rank];
    if (t.shape.length !== 2 || t.shape[0] !== want[0] || t.shape[1] !== want[1]) {
      throw new Error(`LoRA adapter: ${t.name} has shape [${t.shape.join(', ')}], expected [${want.join(', ')}] for rank ${rank}`);
    }
    const id = `${key.layer}.${key.module}`;
    const entry = found.get(id) ?? {};
    if (entry[key.which]) throw new Error(`LoRA adapter: ${t.name} given twice`);
    entry[key.which] = t;
    found.set(id, entry);
  }
  const out = new Map<string, { A: TensorData; B: TensorData }>();
  for (const [id, e] of found) {
    if (!e.A || !e.B)
      throw new Error(
        `LoRA adapter: layer ${id.split('.')[0]} ${id.split('.')[1]} has lora_${e.A ? 'A' : 'B'} without lora_${e.A ? 'B' : 'A'}`,
      );
    out.set(id, { A: e.A, B: e.B });
  }
  return out;
}

/** A PEFT adapter as f32 matrices for the reference model. */
export function referenceLora(
  cfg: ModelConfig,
  opts: { rank: number; alpha: number; useRslora?: boolean },
  tensors: Iterable<TensorData>,
): ReferenceLora {
  const lora = new ReferenceLora(opts.rank, loraScale(opts.alpha, opts.rank, opts.useRslora ?? false));
  for (const [id, { A, B }] of groupLoraTensors(cfg, opts.rank, tensors)) {
    const [l, module] = id.split('.') as [string, LoraModule];
    lora.set(Number(l), module, { A: tensorToF32(A), B: tensorToF32(B) });
  }
  return lora;
}

/** The scale s and the dims both directions take after the buffers: N rows, IC inputs, OC outputs, rank r. */
type LoraDims = [scale: number, N: number, IC: number, OC: number, r: number];

/** Calls `each(n, u)` for every row n of inp with u (r) = A inp[n]: the `u = inp A^T` of both directions. */
function forEachDown(inp: Floats, A: Floats, [, N, IC, , r]: LoraDims, each: (n: number, u: Float64Array) => void): void {
  const u = new Float64Array(r);
  for (let n = 0; n < N; n++) {
    for (let j = 0; j < r; j++) {
      let acc = 0;
      for (let i = 0; i < IC; i++) acc += inp[n * IC + i] * A[j * IC + i];
      u[j] = acc;
    }
    each(n, u);
  }
}

/**
 * out (N, OC) += scale * (inp (N, IC) A^T) B^T with A (r, IC), B (OC, r): the update a LoRA adds to
 * the Linear output `out` (computed first from the frozen weight).
 */
export function loraForward(
  out: Floats, // (N, OC)
  inp: Floats, // (N, IC)
  A: Floats, // (r, IC)
  B: Floats, // (OC, r)
  ...dims: LoraDims
): void {
  const [scale, , , OC, r] = dims;
  forEachDown(inp, A, dims, (n, u) => {
    for (let o = 0; o < OC; o++) {
      let acc = 0;
      for (let j = 0; j < r; j++) acc += B[o * r + j] * u[j];
      out[n * OC + o] += scale * acc;
    }
  });
}

/**
 * Backward of loraForward, accumulating. The forward added out += s (inp A^T) B^T, so with
 * g = dout (N, OC), u = inp A^T (N, r) and e = s g B (N, r):
 *   dinp += e A,   dA += e^T inp,   dB += s g^T u.
 * (The frozen Linear's own dinp is linearBackward's.)
 */
export function loraBackward(
  dinp: Floats, // (N, IC) accumulated
  dA: Floats, // (r, IC) accumulated
  dB: Floats, // (OC, r) accumulated
  dout: Floats, // (N, OC)
  inp: Floats, // (N, IC)
  A: Floats, // (r, IC)
  B: Floats, // (OC, r)
  ...dims: LoraDims
): void {
  const [scale, , IC, OC, r] = dims;
  const e = new Float64Array(r);
  forEachDown(inp, A, dims, (n, u) => {
    for (let j = 0; j < r; j++) {
      let ge = 0;
      for (let o = 0; o < OC; o++) ge += dout[n * OC + o] * B[o * r + j];
      e[j] = scale * ge;
    }
    for (let i = 0; i < IC; i++) {
      let acc = 0;
      for (let j = 0; j < r; j++) acc += e[j] * A[j * IC + i];
      dinp[n * IC + i] += acc;
    }
    for (let j = 0; j < r; j++) for (let i = 0; i < IC; i++) dA[j * IC + i] += e[j] * inp[n * IC + i];
    for (let o = 0; o < OC; o++) for (let j = 0; j < r; j++) dB[o * r + j] += scale * dout[n * OC + o] * u[j];
  });
}

/** Rows of the parts (N, widths[i]) side by side: (N, sum of widths), as a fused Linear's output. */
function concatColumns(parts: readonly Floats[], widths: readonly number[], N: number): Float64Array {
  const W = widths.reduce((a, b) => a + b, 0);
  const out = new Float64Array(N * W);
  for (let n = 0; n < N; n++) {
    let c = n * W;
    parts.forEach((p, i) => {
      for (let j = 0; j < widths[i]; j++) out[c++] = p[n * widths[i] + j];
    });
  }
  return out;
}

/**
 * A fused module's LoRA (Phi-3 qkv_proj, gate_up_proj: one A, one B [sum of widths, r]) on a model
 * whose reference keeps the fused output's parts apart (q, k, v or gate, up): loraForward over the
 * concatenated output, each part's columns added into it.
 */
export function loraForwardSplit(
  outs: readonly Floats[], // (N, widths[i]) each, accumulated
  widths: readonly number[],
  inp: Floats, // (N, IC)
  A: Floats, // (r, IC)
  B: Floats, // (sum widths, r)
  scale: number,
  N: number,
  IC: number,
  r: number,
): void {
  const y = concatColumns(
    outs.map((o) => new Float32Array(o.length)),
    widths,
    N,
  );
  loraForward(y, inp, A, B, scale, N, IC, y.length / N, r);
  const W = y.length / N;
  for (let n = 0; n < N; n++) {
    let c = n * W;
    outs.forEach((o, i) => {
      for (let j = 0; j < widths[i]; j++) o[n * widths[i] + j] += y[c++];
    });
  }
}

/** Backward of loraForwardSplit: loraBackward with the parts' gradients side by side. */
export function loraBackwardSplit(
  dinp: Floats, // (N, IC) accumulated
  dA: Floats, // (r, IC) accumulated
  dB: Floats, // (sum widths, r) accumulated
  douts: readonly Floats[], // (N, widths[i]) each
  widths: readonly number[],
  inp: Floats,
  A: Floats,
  B: Floats,
  scale: number,
  N: number,
  IC: number,
  r: number,
): void {
  const g = concatColumns(douts, widths, N);
  loraBackward(dinp, dA, dB, g, inp, A, B, scale, N, IC, g.length / N, r);
}

/**
 * Seeded random PEFT tensors for tests: A ~ N(0, 1/in) and, unlike a fresh adapter (B = 0), B
 * ~ N(0, bScale) so the update is visible in the logits.
 */
export function randomLoraTensors(
  cfg: ModelConfig,
  rank: number,
  modules: readonly LoraModule[],
  seed: number,
  dtype: DType = 'f32',
  bScale = 0.5,
): TensorData[] {
  const rng = new Rng(seed);
  const out: TensorData[] = [];
  for (let l = 0; l < cfg.numLayers; l++) {
    for (const m of modules) {
      const d = loraModuleDims(cfg, m);
      out.push(tensorFromF32(loraTensorName(l, m, 'A'), [rank, d.in], rng.normals(rank * d.in, 1 / Math.sqrt(d.in)), dtype));
      out.push(tensorFromF32(loraTensorName(l, m, 'B'), [d.out, rank], rng.normals(d.out * rank, bScale / Math.sqrt(rank)), dtype));
    }
  }
  return out;
}
