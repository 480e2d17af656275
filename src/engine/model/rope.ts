/**
 * RoPE tables: the inverse frequencies of a model (default, linear and llama3 scaling, computed
 * once on the CPU the way transformers' `modeling_rope_utils.py` does in f32) and the cos/sin table
 * every RoPE kernel reads.
 *
 * Table layout (the contract with the qkv kernels, docs/engine.md "Shared data layouts"):
 * f32 [positions, HS/2, 2]: entry (p, i) holds cos(p * invFreq[i]) then sin(p * invFreq[i]); in WGSL
 * `array<vec2<f32>>` indexed `p * (HS/2) + i`. HF's rotate_half uses cos/sin = cat(freqs, freqs), so
 * element i and i + HS/2 of a head share entry i.
 *
 * Why a table and not cos/sin in the shader: WGSL's cos/sin are only accurate to 2^-11 on [-pi, pi]
 * (Vulkan), and positions reach 10^5 radians; the table is exact to f32 (computed in f64 from the f32
 * angle, as torch does in f32) and costs positions * HS * 4 bytes (16 MiB for HS 128 at 32k).
 *
 * Not here: applying RoPE (reference/rope.ts, the qkv kernels).
 */
import type { ModelConfig } from './config';

export type RopeParams = Pick<ModelConfig, 'headDim' | 'ropeTheta' | 'ropeScaling'>;

const f = Math.fround;

/** inv_freq [HS/2], f32, with the model's rope scaling applied. */
export function ropeInvFreq(cfg: RopeParams): Float32Array {
  const dim = cfg.headDim;
  if (dim % 2 !== 0) throw new Error(`RoPE needs an even head_dim, got ${dim}`);
  const half = dim / 2;
  const inv = new Float32Array(half);
  // transformers: 1 / base ** (arange(0, dim, 2).float() / dim), all in f32.
  for (let i = 0; i < half; i++) inv[i] = f(1 / f(Math.pow(cfg.ropeTheta, f((2 * i) / dim))));
  const s = cfg.ropeScaling;
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

/** cos/sin table [positions, HS/2, 2] (see the header). */
export function ropeTable(cfg: RopeParams, positions: number): Float32Array {
  const inv = ropeInvFreq(cfg);
  const half = inv.length;
  const table = new Float32Array(positions * half * 2);
  for (let p = 0; p < positions; p++) {
    for (let i = 0; i < half; i++) {
      const a = ropeAngle(p, inv[i]);
      table[(p * half + i) * 2] = Math.cos(a);
      table[(p * half + i) * 2 + 1] = Math.sin(a);
    }
  }
  return table;
}

/** The table in a GPU storage buffer (read-only use), for positions 0 .. positions-1. */
export function createRopeTableBuffer(device: GPUDevice, cfg: RopeParams, positions: number): GPUBuffer {
  if (!(positions > 0)) throw new Error(`RoPE table needs at least one position, got ${positions}`);
  const table = ropeTable(cfg, positions);
  const buffer = device.createBuffer({
    label: `rope-table[${positions}x${cfg.headDim / 2}]`,
    size: table.byteLength,
    usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST,
  });
  device.queue.writeBuffer(buffer, 0, table);
  return buffer;
}
