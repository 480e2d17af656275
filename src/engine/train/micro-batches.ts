/**
 * Packing a step's sequences into micro-batches that fit the activation plan, in order (the
 * gradient of a step is the sum over its micro-batches, accumulated in this fixed order, so the
 * same inputs always give the same bits), and the per-micro-batch arrays the GPU reads:
 *
 * - tokens u32 [T]: the sequences' tokens back to back (sequence b at rows start_b ..).
 * - targets u32 [T]: row t predicts the next token of its sequence; a sequence's last row has
 *   none (NO_TARGET).
 * - rows: one BatchRow per sequence (block-table row b, position 0, its length), the layout
 *   QkvPrep and PrefillAttention read; blockTable: sequence b owns KV blocks from its own start,
 *   each sequence starting on a fresh block.
 *
 * Token i of a sequence is predicted by row start_b + i - 1, so a sequence's logprobs and
 * coefficients are indexed by token and shifted by one row here, in one place.
 * Not here: the loss coefficients (loss.ts), the buffers (activations.ts).
 */
import { NO_TARGET } from '../kernels/cross-entropy';
import { KV_BLOCK, NO_ADAPTER, packBatchRows } from '../kernels/kv-layout';
import type { TrainingSequence } from './types';

export interface MicroBatch {
  /** Indices into the step's sequence list, in order. */
  sequences: number[];
  /** First row of each of those sequences. */
  starts: number[];
  lengths: number[];
  /** Tokens (rows) in all, and of the longest sequence. */
  T: number;
  maxCount: number;
  tokens: Uint32Array;
  targets: Uint32Array;
  rows: Uint32Array;
  blockTable: Uint32Array;
}

export interface PackLimits {
  tokens: number;
  sequences: number;
  maxBlocksPerSeq: number;
  vocabSize: number;
}

export function packMicroBatches(seqs: readonly TrainingSequence[], limits: PackLimits): MicroBatch[] {
  seqs.forEach((s, b) => {
    if (s.tokens.length === 0) throw new Error(`training: sequence ${b} is empty`);
    if (s.tokens.length > limits.tokens) {
      throw new Error(
        `training: sequence ${b} has ${s.tokens.length} tokens, more than the ${limits.tokens} a micro-batch holds on this device (the session's memory plan)`,
      );
    }
    if (s.trainable.length !== s.tokens.length)
      throw new Error(`training: sequence ${b} has ${s.trainable.length} mask entries for ${s.tokens.length} tokens`);
    for (const t of s.tokens)
      if (t >= limits.vocabSize) throw new Error(`training: sequence ${b} has token ${t}, outside the vocabulary of ${limits.vocabSize}`);
  });
  const groups: number[][] = [];
  let current: number[] = [];
  let used = 0;
  seqs.forEach((s, b) => {
    if (current.length > 0 && (used + s.tokens.length > limits.tokens || current.length === limits.sequences)) {
      groups.push(current);
      current = [];
      used = 0;
    }
    current.push(b);
    used += s.tokens.length;
  });
  if (current.length) groups.push(current);
  return groups.map((ids) => buildMicroBatch(seqs, ids, limits.maxBlocksPerSeq));
}

function buildMicroBatch(seqs: readonly TrainingSequence[], ids: number[], maxBlocksPerSeq: number): MicroBatch {
  const lengths = ids.map((b) => seqs[b].tokens.length);
  const T = lengths.reduce((a, b) => a + b, 0);
  const tokens = new Uint32Array(T);
  const targets = new Uint32Array(T).fill(NO_TARGET);
  const starts: number[] = [];
  const blockTable = new Uint32Array(ids.length * maxBlocksPerSeq);
  let row = 0;
  let block = 0;
  ids.forEach((b, j) => {
    const s = seqs[b].tokens;
    starts.push(row);
    tokens.set(s, row);
    for (let i = 0; i + 1 < s.length; i++) targets[row + i] = s[i + 1];
    const blocks = Math.ceil(s.length / KV_BLOCK);
    for (let k = 0; k < blocks; k++) blockTable[j * maxBlocksPerSeq + k] = block + k;
    block += blocks;
    row += s.length;
  });
  const rows = packBatchRows(ids.map((_, j) => ({ seq: j, pos: 0, adapter: NO_ADAPTER, count: lengths[j] })));
  return { sequences: ids, starts, lengths, T, maxCount: Math.max(...lengths), tokens, targets, rows, blockTable };
}

/** Per-token values of the micro-batch's sequences -> per-row array (row start + i - 1 holds token i's). */
export function rowsFromTokens(mb: MicroBatch, perToken: readonly ArrayLike<number>[]): Float32Array {
  const out = new Float32Array(mb.T);
  mb.sequences.forEach((b, j) => {
    const v = perToken[b];
    for (let i = 1; i < mb.lengths[j]; i++) out[mb.starts[j] + i - 1] = v[i];
  });
  return out;
}

/** Per-row values -> per-token arrays of the micro-batch's sequences (token 0 gets NaN), into `out`. */
export function tokensFromRows(mb: MicroBatch, rows: Float32Array, out: Float32Array[]): void {
  mb.sequences.forEach((b, j) => {
    const v = new Float32Array(mb.lengths[j]);
    v[0] = NaN;
    for (let i = 1; i < mb.lengths[j]; i++) v[i] = rows[mb.starts[j] + i - 1];
    out[b] = v;
  });
}
