/**
 * RoPE tables: the inverse frequencies of a model (default, linear, llama3 and Phi-3 longrope
 * scaling, computed once on the CPU the way transformers' `modeling_rope_utils.py` does in f32) and
 * the cos/sin table every RoPE kernel reads.
 *
 * Table layout (the contract with the qkv kernels, docs/engine.md "Shared data layouts"):
 * f32 [positions, R/2, 2] with R the rotated dims of a head (`rotaryDim`: head_dim, or Phi-3's
 * partial_rotary_factor * head_dim): entry (p, i) holds cos(p * invFreq[i]) then sin(p * invFreq[i]);
 * in WGSL `array<vec2<f32>>` indexed `p * (R/2) + i`. HF's rotate_half over the first R dims uses
 * cos/sin = cat(freqs, freqs), so element i and i + R/2 of a head share entry i; dims R.. pass through.
 *
 * LongRoPE (transformers `_compute_longrope_parameters` + `_longrope_frequency_update`; llama.cpp
 * `rope_factors_short/long`): both cos and sin carry the attention factor, and the inverse
 * frequencies are divided by the short factors below original_max_position_embeddings and by the
 * long ones from there on. transformers and vLLM switch a whole forward to the long factors once any
 * position passes that length; Hearth switches per position instead, so a key's rotation depends
 * only on its position (the paged cache and prefix caching stay valid), which is identical to them
 * for every sequence within the original length.
 *
 * Why a table and not cos/sin in the shader: WGSL's cos/sin are only accurate to 2^-11 on [-pi, pi]
 * (Vulkan), and positions reach 10^5 radians; the table is exact to f32 (computed in f64 from the f32
 * angle, as torch does in f32) and costs positions * HS * 4 bytes (16 MiB for HS 128 at 32k).
 *
 * Not here: applying RoPE (reference/rope.ts, the qkv kernels).
 */
import type { ModelConfig } from './model-config';

export type RopeParams = Pick<ModelConfig, 'headDim' | 'ropeTheta' | 'ropeScaling' | 'rotaryDim'>;

const f = Math.fround;

/** Rotated dims of each q/k head (R). */
export function rotaryDim(cfg: Pick<ModelConfig, 'headDim' | 'rotaryDim'>): number {
  return cfg.rotaryDim ?? cfg.headDim;
}

/** Whether layer l applies RoPE (false on SmolLM3's NoPE layers). */
export function layerUsesRope(cfg: Pick<ModelConfig, 'ropeLayers'>, l: number): boolean {
  return cfg.ropeLayers?.[l] ?? true;
}

/**
 * inv_freq [R/2], f32, with the model's rope scaling applied; `long` picks LongRoPE's long factors
 * (the short ones otherwise; ignored by other scalings).
 */
export function ropeInvFreq(cfg: RopeParams, long = false): Float32Array {
  const dim = rotaryDim(cfg);
  if (dim % 2 !== 0) throw new Error(`RoPE needs an even rotary dim, got ${dim}`);
  const half = dim / 2;
  const inv = new Float32Array(half);
  const s = cfg.ropeScaling;
  if (s?.type === 'longrope') {
    // 1 / (ext_factors * base ** (arange(0, dim, 2).float() / dim)), in f32.
    const ext = long ? s.longFactor : s.shortFactor;
    for (let i = 0; i < half; i++) inv[i] = f(1 / f(f(ext[i]) * f(Math.pow(cfg.ropeTheta, f((2 * i) / dim)))));
    return inv;
  }
  // transformers: 1 / base ** (arange(0, dim, 2).float() / dim), all in f32.
  for (let i = 0; i < half; i++) inv[i] = f(1 / f(Math.pow(cfg.ropeTheta, f((2 * i) / dim))));
  if (!s) return inv;
  if (s.type === 'linear') {
    for (let i = 0; i < half; i++) inv[i] = f(inv[i] / s.factor);
    return inv;
  }
  if (s.type === 'freq_factors') {
    if (s.factors.length !== half) throw new Error(`RoPE freq_factors: ${s.factors.length} values for ${half} frequencies`);
    for (let i = 0; i < half; i++) inv[i] = f(inv[i] / s.factors[i]);
    return inv;
  }
  // llama3 (`_compute_llama3_parameters`): low frequencies divided by factor, high kept, a smooth
  // blend in between.
  const lowFreqWavelen = s.originalMaxPositionEmbeddings / s.lowFreqFactor;
  const highFreqWavelen = s.originalMaxPositionEmbeddings / s.highFreqFactor;
  for (let i = 0; i < half; i++) {
    const wavelen = f((2 * Math.PI) / inv[i]);
    let out = wavelen > lowFreqWavelen ? f(inv[i] / s.factor) : inv[i];
    const medium = !(wavelen < highFreqWavelen) && !(wavelen > lowFreqWavelen);
    if (medium) {
      const smooth = f(f(f(s.originalMaxPositionEmbeddings / wavelen) - s.lowFreqFactor) / (s.highFreqFactor - s.lowFreqFactor));
      out = f(f(f(f(1 - smooth) * out) / s.factor) + f(smooth * out));
    }
    inv[i] = out;
  }
  return inv;
}

/**
 * RoPE of layer l: Gemma 3's sliding layers use `rope_local_base_freq` without scaling (transformers
 * Gemma3TextModel.rotary_emb_local; llama.cpp freq_base_swa), every other layer the model's own.
 */
export function layerRopeParams(cfg: RopeParams & Pick<ModelConfig, 'layerTypes' | 'ropeLocalTheta'>, l: number): RopeParams {
  if (cfg.ropeLocalTheta === undefined || cfg.layerTypes[l] !== 'sliding_attention') return cfg;
  return { headDim: cfg.headDim, ropeTheta: cfg.ropeLocalTheta, ropeScaling: null };
}

/** The f32 angle of position `pos` at frequency `invFreq` (torch: an f32 product). */
export function ropeAngle(pos: number, invFreq: number): number {
  return f(pos * invFreq);
}

/**
 * A model's rotation per position, for the table and the reference: the inverse frequencies in use
 * at position p (LongRoPE's short ones below `longFrom`, its long ones from there) and the factor on
 * cos and sin (LongRoPE's attention factor; 1 otherwise).
 */
export interface RopeFreqs {
  short: Float32Array;
  long: Float32Array;
  longFrom: number;
  scale: number;
}

export function ropeFreqs(cfg: RopeParams): RopeFreqs {
  const short = ropeInvFreq(cfg);
  const s = cfg.ropeScaling;
  if (s?.type !== 'longrope') return { short, long: short, longFrom: Infinity, scale: 1 };
  return { short, long: ropeInvFreq(cfg, true), longFrom: s.originalMaxPositionEmbeddings, scale: s.attentionFactor };
}

/** Writes the f32 (cos, sin) of frequency i at `pos` to out[at], out[at + 1]: torch's f32 cos/sin of the f32 angle, times the scale in f32. */
function writeCosSin(out: Float32Array, at: number, freqs: RopeFreqs, pos: number, i: number): void {
  const a = ropeAngle(pos, (pos >= freqs.longFrom ? freqs.long : freqs.short)[i]);
  out[at] = Math.cos(a);
  out[at + 1] = Math.sin(a);
  if (freqs.scale !== 1) {
    out[at] *= f(freqs.scale);
    out[at + 1] *= f(freqs.scale);
  }
}

/** f32 (cos, sin) of frequency i at position pos (the table's entry). */
export function ropeCosSin(freqs: RopeFreqs, pos: number, i: number): [number, number] {
  const out = new Float32Array(2);
  writeCosSin(out, 0, freqs, pos, i);
  return [out[0], out[1]];
}

/** cos/sin table [positions, R/2, 2] (see the header). */
export function ropeTable(cfg: RopeParams, positions: number): Float32Array {
  const freqs = ropeFreqs(cfg);
  const half = freqs.short.length;
  const table = new Float32Array(positions * half * 2);
  for (let p = 0; p < positions; p++) {
    for (let i = 0; i < half; i++) writeCosSin(table, (p * half + i) * 2, freqs, p, i);
  }
  return table;
}

/** The table in a GPU storage buffer (read-only use), for positions 0 .. positions-1. */
export function createRopeTableBuffer(device: GPUDevice, cfg: RopeParams, positions: number): GPUBuffer {
  if (!(positions > 0)) throw new Error(`RoPE table needs at least one position, got ${positions}`);
  const table = ropeTable(cfg, positions);
  const buffer = device.createBuffer({
    label: `rope-table[${positions}x${rotaryDim(cfg) / 2}]`,
    size: table.byteLength,
    usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST,
  });
  device.queue.writeBuffer(buffer, 0, table);
  return buffer;
}
