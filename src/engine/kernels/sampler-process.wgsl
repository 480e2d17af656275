// Sampler pass 1 of 4 (grid: num_chunks x B, 256 threads): one workgroup per CHUNK logits of a row.
// Applies vLLM's processing in order -- grammar bitmask (before the raw statistics, as vLLM's model
// runner does), allowed mask, bad-word and min_tokens bans, logit bias, repetition / frequency /
// presence penalties, temperature (not for greedy rows) -- writes the processed row, and emits
// per-chunk partials: online max / sum-exp of the raw logits, max of the processed ones.
// Prepended: sampler-common.wgsl. Not here: thresholds (select), the draw, outputs.

const WG: u32 = 256u;
const CHUNK: u32 = 2048u;   // logits per workgroup: 8 per thread, consecutive threads on consecutive words

@group(0) @binding(0) var<uniform> dims: SamplerDims;
@group(0) @binding(1) var<storage, read> rows: array<SampleRow>;        // (B)
@group(0) @binding(2) var<storage, read> edits: array<u32>;             // bias pairs and banned ids
@group(0) @binding(3) var<storage, read> grammar: array<u32>;           // (B, W) this step's bitmasks
@group(0) @binding(4) var<storage, read> logits: array<f32>;            // (B, V) raw
@group(0) @binding(5) var<storage, read> counts: array<u32>;            // (maxSeqs, V) output token counts
@group(0) @binding(6) var<storage, read> masks: array<u32>;             // (maxSeqs, 2, W) prompt bits, allowed bits
@group(0) @binding(7) var<storage, read_write> processed: array<f32>;   // (B, V)
@group(0) @binding(8) var<storage, read_write> chunk_stats: array<vec4<f32>>; // (B, num_chunks): raw max, raw sum, proc max, 0

var<workgroup> bias_tab: array<f32, CHUNK>;
var<workgroup> ban_tab: array<atomic<u32>, 64>;   // CHUNK / 32 bits
var<workgroup> red_m: array<f32, WG>;
var<workgroup> red_s: array<f32, WG>;
var<workgroup> red_p: array<f32, WG>;

@compute @workgroup_size(WG)
fn process(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
  let b = wid.y;
  let c = wid.x;
  let V = dims.V;
  let W = dims.W;
  let row = rows[b];
  let c0 = c * CHUNK;

  // The row's sparse lists, scattered into this chunk's tables (every workgroup scans them; they
  // are short, and it saves a pass and keeps bias-before-penalty order in one place).
  for (var j = t; j < CHUNK; j += WG) { bias_tab[j] = 0.0; }
  if (t < 64u) { atomicStore(&ban_tab[t], 0u); }
  workgroupBarrier();
  let eb = row.edit_offset;
  for (var e = t; e < row.bias_count; e += WG) {
    let id = edits[eb + 2u * e];
    if (id >= c0 && id < c0 + CHUNK) { bias_tab[id - c0] = bitcast<f32>(edits[eb + 2u * e + 1u]); }
  }
  let bans = eb + 2u * row.bias_count;
  for (var e = t; e < row.ban_count; e += WG) {
    let id = edits[bans + e];
    if (id >= c0 && id < c0 + CHUNK) { atomicOr(&ban_tab[(id - c0) >> 5u], 1u << ((id - c0) & 31u)); }
  }
  workgroupBarrier();

  let greedy = (row.flags & F_GREEDY) != 0u;
  let use_grammar = (row.flags & F_GRAMMAR) != 0u;
  let use_allowed = (row.flags & F_ALLOWED) != 0u;
  let use_penalties = (row.flags & F_PENALTIES) != 0u;
  let prompt_base = row.slot * 2u * W;
  let allowed_base = prompt_base + W;
  var rm = MASKED;   // raw running max and sum of exp(x - rm)
  var rs = 0.0;
  var pm = MASKED;   // processed max
  for (var j = t; j < CHUNK; j += WG) {
    let i = c0 + j;
    if (i >= V) { break; }
    var x = logits[b * V + i];
    if (use_grammar && !mask_bit(grammar[b * W + (i >> 5u)], i)) { x = MASKED; }
    if (x > MASKED) {
      if (x > rm) {
        rs = rs * exp(rm - x) + 1.0;
        rm = x;
      } else {
        rs += exp(x - rm);
      }
    }
    var z = MASKED;
    let banned = mask_bit(atomicLoad(&ban_tab[j >> 5u]), j);
    let allowed = !use_allowed || mask_bit(masks[allowed_base + (i >> 5u)], i);
    if (x > MASKED && allowed && !banned) {
      z = x + bias_tab[j];
      if (use_penalties) {
        let n = counts[row.slot * V + i];
        if (n > 0u || mask_bit(masks[prompt_base + (i >> 5u)], i)) {
          z = select(z * row.repetition, z / row.repetition, z > 0.0);
        }
        z = z - row.frequency * f32(n);
        if (n > 0u) { z = z - row.presence; }
      }
      if (!greedy) { z = z / row.temperature; }
    }
    processed[b * V + i] = z;
    pm = max(pm, z);
  }

  red_m[t] = rm;
  red_s[t] = rs;
  red_p[t] = pm;
  workgroupBarrier();
  for (var off = WG / 2u; off > 0u; off = off >> 1u) {
    if (t < off) {
      let m2 = red_m[t + off];
      let m = max(red_m[t], m2);
      red_s[t] = red_s[t] * exp(red_m[t] - m) + red_s[t + off] * exp(m2 - m);
      red_m[t] = m;
      red_p[t] = max(red_p[t], red_p[t + off]);
    }
    workgroupBarrier();
  }
  if (t == 0u) {
    chunk_stats[b * dims.num_chunks + c] = vec4<f32>(red_m[0], red_s[0], red_p[0], 0.0);
  }
}
