// Shared declarations of the sampler and logprob kernels, prepended to each of their modules by
// the TS wrappers (sampler.ts, logprobs.ts): the masked-logit sentinel, order-preserving keys,
// the counter-based noise (twin of reference/sampler-noise.ts), and the per-row structs.
// Not here: bindings and entry points (one module per pass), the radix select (sampler-radix.wgsl).

// Threads per workgroup of the row and chunk kernels, set from TS: 256 on GPUs, 32 on software
// rasterisers (SwiftShader zero-fills workgroup memory per invocation, so cost grows with
// threads x workgroup bytes). A power of two >= 32 (>= MAX_TOP).
override WG: u32 = 256u;
// Logits per workgroup in the chunked passes: 8 per thread, consecutive threads on consecutive words.
override CHUNK: u32 = WG * 8u;

// A masked logit. WGSL lets implementations assume there are no infinities, so -inf is replaced
// by a finite value far below any real logit; exp(MASKED - m) is 0 for any real m.
const MASKED: f32 = -3.0e38;
// Below MASKED: the start value of "best score" searches, so a masked token still beats it.
const NEG_BIG: f32 = -3.4e38;
// vLLM floors every returned logprob at -9999 (-inf included).
const LOGPROB_FLOOR: f32 = -9999.0;
// Most top logprobs (and beam candidates) per position: vLLM's default max_logprobs.
const MAX_TOP: u32 = 20u;
// Largest Gumbel value the noise can take (u = 1 - 2^-24 gives 16.6): tokens whose logit is
// more than this below the current best cannot win the draw, so their hash is skipped.
const GUMBEL_MAX: f32 = 17.0;

// SampleRow.flags (sampling/sampler-row.ts RowFlag).
const F_GREEDY: u32 = 1u;
const F_ALLOWED: u32 = 2u;
const F_GRAMMAR: u32 = 4u;
const F_PENALTIES: u32 = 8u;
const F_UPDATE_COUNTS: u32 = 16u;
const F_TOP_BY_RANK: u32 = 32u;

// struct SampleRow, one row of a sampler step, is generated from SAMPLE_ROW (sampler-specs.ts).

// Per-row results of the select pass.
struct RowInfo {
  raw_max: f32,       // max of the raw (grammar-masked) logits
  lse: f32,           // log-sum-exp of the raw (grammar-masked) logits
  threshold: u32,     // order key: tokens with key(processed) >= threshold may be drawn
  proc_max: f32,      // max of the processed logits
}

// Maps f32 to u32 so that unsigned order equals float order (-0 and +0 share a key).
fn order_key(v: f32) -> u32 {
  var b = bitcast<u32>(v);
  if (b == 0x80000000u) { b = 0u; }
  if ((b & 0x80000000u) != 0u) { return ~b; }
  return b | 0x80000000u;
}

// pcg4d (Jarzynski & Olano 2020): the same steps as pcg4d in reference/sampler-noise.ts.
fn pcg4d(vin: vec4<u32>) -> vec4<u32> {
  var v = vin * 1664525u + 1013904223u;
  v.x += v.y * v.w;
  v.y += v.z * v.x;
  v.z += v.x * v.y;
  v.w += v.y * v.z;
  v = v ^ (v >> vec4<u32>(16u));
  v.x += v.y * v.w;
  v.y += v.z * v.x;
  v.z += v.x * v.y;
  v.w += v.y * v.z;
  return v;
}

// Gumbel noise of `token` at `step` for a sequence seeded (seed_lo, seed_hi): -log(E), E = -log(u).
fn gumbel(seed_lo: u32, seed_hi: u32, step: u32, token: u32) -> f32 {
  let m = pcg4d(vec4<u32>(seed_lo, seed_hi, step, token)).w >> 9u;
  let u = (f32(m) + 0.5) * (1.0 / 8388608.0);
  var e: f32;
  if (u < 0.5) {
    e = -log(u);
  } else {
    // Near u = 1, log(u) has only absolute accuracy (2^-21 in WGSL) while E -> 0 decides the
    // winners; v = 1 - u is exact here, and -log(1 - v) is a short series for small v.
    let v = (f32(8388607u - m) + 0.5) * (1.0 / 8388608.0);
    if (v <= 0.03125) {
      e = v * (1.0 + v * (0.5 + v * (0.33333334 + v * (0.25 + v * 0.2))));
    } else {
      e = -log(u);
    }
  }
  return -log(e);
}

fn mask_bit(word: u32, i: u32) -> bool {
  return ((word >> (i & 31u)) & 1u) != 0u;
}

fn floor_logprob(v: f32) -> f32 {
  return max(v, LOGPROB_FLOOR);
}
