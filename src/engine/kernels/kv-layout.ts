/**
 * The paged KV cache's layout as the attention kernels define it (docs/engine.md "Shared data
 * layouts"): tokens per block (KV_BLOCK, passed to every kernel that addresses the cache as the
 * pipeline override of the same name) and a step's batch rows (`BatchRow`, declared once here as a
 * storage struct: the WGSL `struct BatchRow` is generated from it, and `packBatchRows` packs rows
 * through spec.ts's packer). Pure TS: the KV cache (model/kv/kv-cache.ts), the generation core and the
 * reference read it too.
 *
 * Not here: the cache buffers (model/kv/kv-cache.ts), which block belongs to whom (the block manager).
 */
import { packStructs, type StructSpec } from './spec';

/** Tokens per KV block: the attention kernels' paging unit, passed to them as an override. */
export const KV_BLOCK = 16;

/** The `adapter` of a batch row without a LoRA adapter. */
export const NO_ADAPTER = 0xffffffff;

/** One row of a step's batch, as kernels read it (`array<BatchRow>`, 16 bytes a row). */
export const BATCH_ROW = {
  name: 'BatchRow',
  fields: {
    /** Block-table row of the sequence. */
    seq: 'u32',
    /** Position of this row's first token in its sequence (its cached prefix length). */
    pos: 'u32',
    /** LoRA slot, NO_ADAPTER for none. */
    adapter: 'u32',
    /** Tokens of this row in this step: 1 in decode, the chunk length in prefill. */
    count: 'u32',
  },
} as const satisfies StructSpec;

/** One batch row's values (BATCH_ROW's fields). */
export type BatchRow = Record<keyof typeof BATCH_ROW.fields, number>;

/** Rows for upload as `array<BatchRow>` (at least one row, so the binding is never empty). */
export function packBatchRows(rows: readonly BatchRow[]): Uint32Array {
  return new Uint32Array(packStructs(BATCH_ROW, rows));
}
