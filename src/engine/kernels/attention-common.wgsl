// Shared by every kernel that reads or writes the paged KV cache (prepended by the TS wrappers).
// Layout (docs/engine.md "Shared data layouts"): a layer's K or V is f32
// [numBlocks, NKV, KV_BLOCK, HS]; blockTable is u32 [maxSeqs, maxBlocksPerSeq].
// The including shader declares `blockTable: array<u32>`; its spec declares `rows: array<BatchRow>`
// (the struct is generated from kernels/kv-layout.ts BATCH_ROW).

// Tokens per KV block (kernels/kv-layout.ts KV_BLOCK), given when the pipeline is created: every
// pipeline that includes this file passes it (an override, not a const: it sizes no private array).
override KV_BLOCK: u32;

// Max of an empty score set: finite, so exp(NEG_BIG - m) is 0 without inf - inf = NaN.
const NEG_BIG: f32 = -3.0e38;

// Element index (in units of `unit` floats, 1 or 4) of (position p of block-table row seq,
// kv head h, dim 0): ((block * nkv + h) * KV_BLOCK + p % KV_BLOCK) * hsUnits.
fn kv_index(seq: u32, p: u32, h: u32, nkv: u32, hsUnits: u32, maxBlocksPerSeq: u32) -> u32 {
  let block = blockTable[seq * maxBlocksPerSeq + p / KV_BLOCK];
  return ((block * nkv + h) * KV_BLOCK + p % KV_BLOCK) * hsUnits;
}

// First key position a query at qpos sees: 0 under full attention (window 0), qpos - window + 1 in a
// sliding-window layer (model/config/attention-window.ts: transformers' sliding_window_overlay, llama.cpp's
// LLAMA_SWA_TYPE_STANDARD). Keys before it may sit in KV blocks already freed: never read them.
fn first_key(qpos: u32, window: u32) -> u32 {
  if (window == 0u || qpos < window) {
    return 0u;
  }
  return qpos + 1u - window;
}
