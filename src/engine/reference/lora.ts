/**
 * LoRA, reference: the low-rank update of a Linear layer, y += s * (x A^T) B^T, with A [r, in] and
 * B [out, r] in PEFT's layout and s = alpha / r (alpha / sqrt(r) with rsLoRA), plus a PEFT adapter
 * (adapter_model.safetensors key names) as per-layer f32 matrices for the reference model.
 * Plain loops, f64 accumulation: the oracle of the GPU LoRA kernels, of the engine's adapter
 * batches and (with `loraBackward`) of the trainer.
 *
 * Not here: PEFT's module names and dims and the adapter's tensor checks (model/lora/), GPU
 * residency of adapters (generate/lora-pool.ts), the whole-model training pass (model-train.ts).
 */
import type { ModelConfig } from '../model/config/model-config';
import { groupLoraTensors } from '../model/lora/adapter-tensors';
import { loraScale } from '../model/lora/lora-config';
import { loraModuleDims, loraTensorName, type LoraModule } from '../model/lora/peft-modules';
import { tensorFromF32, tensorToF32 } from '../tensor/tensor-data';
import type { DType } from '../tensor/dtype';
import type { TensorData } from '../tensor/tensor-data';
import type { Floats } from './floats';
import { Rng } from '../tensor/random';

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
