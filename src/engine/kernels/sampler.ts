/**
 * The GPU sampler: per decode step, logits [B, V] (f32, written by lm_head, never read back) in,
 * one token id, its raw logprob and the requested top logprobs per row out. Four dispatches
 * (`encode`'s calls) recorded into the caller's compute pass, nothing submitted, and 16 bytes per
 * row to copy back (176 when top logprobs are asked for), contiguous for one copyBufferToBuffer.
 *
 * Passes (WGSL in sampler-*.wgsl; the order is vLLM's, docs/reference/vllm-chat.md §3):
 *   1. process  (ceil(V/CHUNK) x B workgroups, CHUNK = 8 x WG threads): grammar mask, raw
 *      max/sum-exp partials, allowed mask, bans, bias, penalties, temperature -> processed row
 *   2. select   (B): row log-sum-exp; min_p / top_k / top_p as one logit threshold by radix select
 *      (sampler-radix.wgsl says why), over a compact candidate list when a bound prunes the row;
 *      exact raw top-k for logprobs
 *   3. draw     (ceil(V/CHUNK) x B): Gumbel-max over tokens above the threshold, per chunk
 *   4. finish   (B): merge, output record, top logprobs in vLLM order, count the token
 * Splitting V over chunk workgroups in passes 1 and 3 keeps a B = 1 step parallel across the GPU;
 * the one-workgroup-per-row passes only read what the select needs. Loads are scalar, consecutive
 * threads on consecutive words (coalesced): rows start at b * V and V may be odd (1003 in tests),
 * so vec4 loads would need a padded layout that lm_head does not write.
 *
 * State per sequence slot, kept on the GPU across steps: output token counts u32 [maxSeqs, V]
 * (updated by pass 4), the prompt-token bitmask and the allowed-token bitmask [maxSeqs, 2, W]
 * (written at `admit`). Per step, `prepare` writes the rows, their token lists (bias, bans) and
 * grammar bitmask rows with queue.writeBuffer; its calls (`encode`) must be recorded before the
 * next `prepare`.
 * Not here: the sampling reference (reference/sampler.ts), prompt logprobs (logprobs.ts),
 * choosing which ids a bad word bans (the caller), stop handling (the generation core).
 */
import type { KernelContext } from '../gpu/context';
import { createStorage, writeBytes } from '../gpu/buffers';
import { MAX_TOP_LOGPROBS, type TokenLogprob } from '../sampling/logprobs';
import { bannedAtStep, editWords, packEdits, tokenBitmask, type SamplerStepRow } from '../sampling/sampler-row';
import { resolveSampling, type ResolvedSampling, type SamplingParams } from '../sampling/sampling-params';
import { KernelCall } from '../gpu/kernel-call';
import { SpecKernel } from './spec-kernel';
import {
  SAMPLE_ROW,
  SAMPLE_ROW_BYTES,
  SAMPLER_DRAW_SPEC,
  SAMPLER_FINISH_SPEC,
  SAMPLER_PROCESS_SPEC,
  SAMPLER_SELECT_SPEC,
  sampleRow,
  type SampleRowValues,
} from './sampler-specs';
import { packStructs, packUniformValues } from './spec';

/** Logits per thread in the chunked passes: CHUNK = 8 * workgroup size (sampler-common.wgsl). */
export const SAMPLER_PER_THREAD = 8;
/** Entries of a row's candidate list in the select pass (CANDIDATES in sampler-select.wgsl). */
const SAMPLER_CANDIDATES = 4096;
/** Bytes of one row's output record: token id, raw logprob, top count, reserved. */
export const SAMPLER_RECORD_BYTES = 16;
/** Bytes of one row's top logprobs: MAX_TOP (id, logprob) pairs. */
export const SAMPLER_TOP_BYTES = MAX_TOP_LOGPROBS * 8;

export interface SamplerOptions {
  /** Sequence slots whose penalty state and masks are kept (slot ids 0..maxSeqs-1). */
  maxSeqs: number;
  /** Most rows in one step (B). */
  maxBatch: number;
  vocabSize: number;
  /**
   * Threads per workgroup of the row and chunk passes (WG in sampler-common.wgsl): 256 (default)
   * on GPUs; 32 on software adapters, where workgroup memory is zero-filled per invocation and
   * that cost grows with threads x bytes (`samplerWorkgroupSize` picks). Same kernels, same results.
   */
  workgroupSize?: SamplerWorkgroupSize;
}

export type SamplerWorkgroupSize = 32 | 64 | 128 | 256;

/**
 * The workgroup size for an adapter: 256 on GPUs; 32 on software rasterisers, where a B = 64 step
 * at V = 64 costs ~1.8 s at 256 threads and ~0.11 s at 32 (SwiftShader, 2 cores).
 */
export function samplerWorkgroupSize(isSoftwareAdapter: boolean): SamplerWorkgroupSize {
  return isSoftwareAdapter ? 32 : 256;
}

export interface SamplerRowOutput {
  token: number;
  /** Raw logprob (log_softmax of the grammar-masked logits), floored at -9999. */
  logprob: number;
  /** The requested alternatives: vLLM's sampled-first order, or rank order for beam rows. */
  top: TokenLogprob[];
}

interface PassGroups {
  process: GPUBindGroup;
  select: GPUBindGroup;
  draw: GPUBindGroup;
  finish: GPUBindGroup;
}

const PASS_SPECS = { process: SAMPLER_PROCESS_SPEC, select: SAMPLER_SELECT_SPEC, draw: SAMPLER_DRAW_SPEC, finish: SAMPLER_FINISH_SPEC };

const BIND_CACHE_LIMIT = 8;

/** The sampler (see the header): one spec per pass (sampler-specs.ts), the first one SpecKernel's own. */
export class Sampler extends SpecKernel {
  readonly V: number;
  /** Words per bitmask row: ceil(V / 32), the width of xgrammar's bitmask. */
  readonly W: number;
  readonly numChunks: number;
  /** Logits per workgroup of the chunked passes. */
  readonly chunk: number;
  readonly workgroupSize: SamplerWorkgroupSize;
  readonly maxSeqs: number;
  readonly maxBatch: number;

  /** u32 (maxSeqs, V): how often each token occurs in each slot's output. */
  readonly counts: GPUBuffer;
  /** u32 (maxSeqs, 2, W): prompt-token bits, then allowed-token bits. */
  readonly masks: GPUBuffer;
  /** f32 (maxBatch, V): the processed logits of the last step (tests read it). */
  readonly processed: GPUBuffer;
  /** RowInfo (maxBatch): raw max, lse, threshold key, processed max of the last step. */
  readonly rowInfo: GPUBuffer;
  /** u32: (B, 4) records then (B, MAX_TOP, 2) top pairs; see `outputBytes`. */
  readonly output: GPUBuffer;

  private readonly dims: GPUBuffer;
  private readonly rows: GPUBuffer;
  private edits: GPUBuffer;
  private editCapacity: number;
  private readonly grammar: GPUBuffer;
  private readonly chunkStats: GPUBuffer;
  private readonly rowTop: GPUBuffer;
  private readonly drawBest: GPUBuffer;
  private readonly candidates: GPUBuffer;
  private readonly zeros: Uint32Array;

  private readonly pipelines: Record<keyof PassGroups, GPUComputePipeline>;
  private readonly groups = new Map<GPUBuffer, PassGroups>();

  private readonly slots: (ResolvedSampling | undefined)[];
  private batch = 0;
  private batchWantsTop = false;

  private readonly device: GPUDevice;

  constructor(ctx: KernelContext, opts: SamplerOptions) {
    super(ctx, SAMPLER_PROCESS_SPEC);
    const device = ctx.device;
    this.device = device;
    const { maxSeqs, maxBatch, vocabSize: V } = opts;
    if (!(Number.isInteger(V) && V >= 1)) throw new Error(`Sampler: vocabSize must be a positive integer, got ${V}.`);
    if (!(Number.isInteger(maxSeqs) && maxSeqs >= 1)) throw new Error(`Sampler: maxSeqs must be >= 1, got ${maxSeqs}.`);
    if (!(Number.isInteger(maxBatch) && maxBatch >= 1)) throw new Error(`Sampler: maxBatch must be >= 1, got ${maxBatch}.`);
    this.V = V;
    this.W = Math.ceil(V / 32);
    this.workgroupSize = opts.workgroupSize ?? 256;
    if (![32, 64, 128, 256].includes(this.workgroupSize))
      throw new Error(`Sampler: workgroupSize must be 32, 64, 128 or 256, got ${this.workgroupSize}.`);
    this.chunk = SAMPLER_PER_THREAD * this.workgroupSize;
    this.numChunks = Math.ceil(V / this.chunk);
    this.maxSeqs = maxSeqs;
    this.maxBatch = maxBatch;
    const limit = ctx.maxStorageBindingSize;
    for (const [what, bytes] of [
      ['counts (maxSeqs x V)', maxSeqs * V * 4],
      ['processed (maxBatch x V)', maxBatch * V * 4],
    ] as const) {
      if (bytes > limit)
        throw new Error(`Sampler: ${what} needs ${bytes} bytes, above this GPU's binding limit ${limit}; lower maxSeqs / maxBatch.`);
    }

    this.dims = device.createBuffer({ label: 'sampler.dims', size: 16, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
    this.rows = createStorage(device, maxBatch * SAMPLE_ROW_BYTES, 'sampler.rows');
    this.editCapacity = 4096;
    this.edits = createStorage(device, this.editCapacity * 4, 'sampler.edits');
    this.grammar = createStorage(device, maxBatch * this.W * 4, 'sampler.grammar');
    this.counts = createStorage(device, maxSeqs * V * 4, 'sampler.counts');
    this.masks = createStorage(device, maxSeqs * 2 * this.W * 4, 'sampler.masks');
    this.processed = createStorage(device, maxBatch * V * 4, 'sampler.processed');
    this.chunkStats = createStorage(device, maxBatch * this.numChunks * 16, 'sampler.chunkStats');
    this.rowInfo = createStorage(device, maxBatch * 16, 'sampler.rowInfo');
    this.rowTop = createStorage(device, maxBatch * SAMPLER_TOP_BYTES, 'sampler.rowTop');
    this.drawBest = createStorage(device, maxBatch * this.numChunks * 8, 'sampler.drawBest');
    this.candidates = createStorage(device, maxBatch * SAMPLER_CANDIDATES * 8, 'sampler.candidates');
    this.output = createStorage(device, maxBatch * (SAMPLER_RECORD_BYTES + SAMPLER_TOP_BYTES), 'sampler.output');
    this.zeros = new Uint32Array(V);
    this.slots = new Array(maxSeqs).fill(undefined);

    const pipeline = (pass: keyof PassGroups, entryPoint: string) =>
      this.pipeline({ label: `sampler.${pass}`, spec: PASS_SPECS[pass], entryPoint, overrides: { WG: this.workgroupSize } });
    this.pipelines = {
      process: pipeline('process', 'process'),
      select: pipeline('select', 'select_row'),
      draw: pipeline('draw', 'draw'),
      finish: pipeline('finish', 'finish'),
    };
  }

  /**
   * Starts a sequence in `slot`: resolves its parameters (vLLM's normalisation), clears its output
   * counts and writes its prompt and allowed-token bitmasks. Returns the resolved parameters
   * (with the seed actually used).
   */
  admit(slot: number, params: SamplingParams, promptTokenIds: ArrayLike<number>): ResolvedSampling {
    this.checkSlot(slot);
    const r = resolveSampling(params, this.V);
    const masks = new Uint32Array(2 * this.W);
    masks.set(tokenBitmask(promptTokenIds, this.V), 0);
    if (r.allowedTokenIds) masks.set(tokenBitmask(r.allowedTokenIds, this.V), this.W);
    writeBytes(this.device, this.masks, slot * 2 * this.W * 4, masks);
    writeBytes(this.device, this.counts, slot * this.V * 4, this.zeros);
    this.slots[slot] = r;
    return r;
  }

  /** Forgets a finished sequence; its slot can be admitted again. */
  release(slot: number): void {
    this.checkSlot(slot);
    this.slots[slot] = undefined;
  }

  /** Parameters a slot was admitted with, or undefined. */
  slotParams(slot: number): ResolvedSampling | undefined {
    return this.slots[slot];
  }

  /** Writes one step's rows (row b samples logits row b). `encode` and recording its calls must come next. */
  prepare(rows: readonly SamplerStepRow[]): void {
    const B = rows.length;
    if (B < 1 || B > this.maxBatch) throw new Error(`Sampler.prepare: ${B} rows, expected 1..${this.maxBatch}.`);
    // Slots whose output counts a row updates: two such rows would race on the counts. Rows that
    // leave the counts alone may share a slot (a jump-forward draft samples each of its positions).
    const seen = new Set<number>();
    const resolved: ResolvedSampling[] = [];
    const banned: Uint32Array[] = [];
    let words = 0;
    for (const row of rows) {
      this.checkSlot(row.slot);
      const r = this.slots[row.slot];
      if (!r) throw new Error(`Sampler.prepare: slot ${row.slot} was not admitted.`);
      if (row.updateCounts ?? true) {
        if (seen.has(row.slot)) throw new Error(`Sampler.prepare: slot ${row.slot} has two rows that update its counts in one step.`);
        seen.add(row.slot);
      }
      if (!(Number.isInteger(row.outputLen) && row.outputLen >= 0))
        throw new Error(`Sampler.prepare: outputLen must be a non-negative integer, got ${row.outputLen}.`);
      if (row.grammarBitmask && row.grammarBitmask.length !== this.W) {
        throw new Error(`Sampler.prepare: a grammar bitmask row has ${row.grammarBitmask.length} words, expected ceil(V/32) = ${this.W}.`);
      }
      const ban = bannedAtStep(r, row.outputLen, row.bannedTokenIds);
      if (ban.length > 0 && ban[ban.length - 1] >= this.V)
        throw new Error(`Sampler.prepare: banned token id ${ban[ban.length - 1]} is outside [0, ${this.V}).`);
      resolved.push(r);
      banned.push(ban);
      words += editWords(r, ban);
    }
    if (words > this.editCapacity) this.growEdits(words);

    const packed: SampleRowValues[] = [];
    const edits = new Uint32Array(Math.max(1, words));
    let offset = 0;
    for (let b = 0; b < B; b++) {
      const row = rows[b];
      const r = resolved[b];
      packEdits(edits, offset, r, banned[b]);
      packed.push(
        sampleRow(r, {
          slot: row.slot,
          outputLen: row.outputLen,
          editOffset: offset,
          banCount: banned[b].length,
          hasGrammar: row.grammarBitmask !== undefined,
          updateCounts: row.updateCounts ?? true,
        }),
      );
      offset += editWords(r, banned[b]);
      if (row.grammarBitmask) writeBytes(this.device, this.grammar, b * this.W * 4, row.grammarBitmask);
    }
    writeBytes(this.device, this.rows, 0, new Uint32Array(packStructs(SAMPLE_ROW, packed)));
    writeBytes(this.device, this.edits, 0, edits);
    this.device.queue.writeBuffer(
      this.dims,
      0,
      packUniformValues(SAMPLER_PROCESS_SPEC, { V: this.V, B, num_chunks: this.numChunks, W: this.W }),
    );
    this.batch = B;
    this.batchWantsTop = resolved.some((r) => r.topLogprobs > 0);
  }

  /**
   * The four passes over `logits` (f32 [B, V], B from the last `prepare`), to record before the next
   * `prepare`. Their bind groups are cached per logits buffer and read the sizes `prepare` wrote,
   * so the calls own no uniform buffer (dispose is a no-op).
   */
  encode(a: { logits: GPUBuffer }): KernelCall[] {
    const { logits } = a;
    const B = this.batch;
    if (B === 0) throw new Error('Sampler.encode: call prepare() first.');
    if (logits.size < B * this.V * 4)
      throw new Error(`Sampler.encode: logits holds ${logits.size} bytes, needs B*V*4 = ${B * this.V * 4}.`);
    const g = this.bindGroups(logits);
    const grids: Record<keyof PassGroups, [number, number]> = {
      process: [this.numChunks, B],
      select: [B, 1],
      draw: [this.numChunks, B],
      finish: [B, 1],
    };
    return (['process', 'select', 'draw', 'finish'] as const).map(
      (name) => new KernelCall(`sampler.${name}`, this.pipelines[name], g[name], [...grids[name], 1], null),
    );
  }

  /** Bytes of `output` the prepared step needs copied back: records, plus top pairs if any row asked. */
  outputBytes(): number {
    return this.batch * (SAMPLER_RECORD_BYTES + (this.batchWantsTop ? SAMPLER_TOP_BYTES : 0));
  }

  /** Records the one copy of this step's results into `dst` (after the pass ends); returns its size. */
  copyOutput(encoder: GPUCommandEncoder, dst: GPUBuffer, dstOffset = 0): number {
    const bytes = this.outputBytes();
    encoder.copyBufferToBuffer(this.output, 0, dst, dstOffset, bytes);
    return bytes;
  }

  /** Decodes the bytes `copyOutput` copied (for the prepared step's rows). */
  decodeOutput(bytes: ArrayBuffer): SamplerRowOutput[] {
    const B = this.batch;
    const u32 = new Uint32Array(bytes);
    const f32 = new Float32Array(bytes);
    const out: SamplerRowOutput[] = [];
    for (let b = 0; b < B; b++) {
      const k = u32[b * 4 + 2];
      const top: TokenLogprob[] = [];
      const base = B * 4 + b * MAX_TOP_LOGPROBS * 2;
      for (let j = 0; j < k; j++) top.push({ id: u32[base + 2 * j], logprob: f32[base + 2 * j + 1] });
      out.push({ token: u32[b * 4], logprob: f32[b * 4 + 1], top });
    }
    return out;
  }

  destroy(): void {
    for (const b of [this.dims, this.rows, this.edits, this.grammar, this.counts, this.masks, this.processed]) b.destroy();
    for (const b of [this.chunkStats, this.rowInfo, this.rowTop, this.drawBest, this.candidates, this.output]) b.destroy();
    this.groups.clear();
  }

  private checkSlot(slot: number): void {
    if (!(Number.isInteger(slot) && slot >= 0 && slot < this.maxSeqs))
      throw new Error(`Sampler: slot ${slot} is outside [0, ${this.maxSeqs}).`);
  }

  private growEdits(words: number): void {
    let capacity = this.editCapacity;
    while (capacity < words) capacity *= 2;
    this.edits.destroy();
    this.edits = createStorage(this.device, capacity * 4, 'sampler.edits');
    this.editCapacity = capacity;
    this.groups.clear();
  }

  private bindGroups(logits: GPUBuffer): PassGroups {
    let g = this.groups.get(logits);
    if (g) return g;
    const { rows, edits, grammar, counts, masks, processed, chunkStats, rowInfo, rowTop, candidates, drawBest, output } = this;
    const group = (pass: keyof PassGroups, buffers: Record<string, GPUBuffer>) => this.bindGroup(PASS_SPECS[pass], buffers, this.dims);
    g = {
      process: group('process', { rows, edits, grammar, logits, counts, masks, processed, chunkStats }),
      select: group('select', { rows, logits, grammar, processed, chunkStats, rowInfo, rowTop, candidates }),
      draw: group('draw', { rows, processed, rowInfo, drawBest }),
      finish: group('finish', { rows, logits, grammar, rowInfo, rowTop, drawBest, counts, output }),
    };
    if (this.groups.size >= BIND_CACHE_LIMIT) this.groups.delete(this.groups.keys().next().value as GPUBuffer);
    this.groups.set(logits, g);
    return g;
  }
}

/** TS twin of order_key (sampler-common.wgsl): RowInfo.threshold keeps tokens with key(z) >= it. */
export function orderKey(v: number): number {
  const f = new Float32Array([v === 0 ? 0 : v]);
  const b = new Uint32Array(f.buffer)[0];
  return (b & 0x80000000) !== 0 ? ~b >>> 0 : (b | 0x80000000) >>> 0;
}

/** The GPU's stand-in for -inf in `processed` (MASKED in sampler-common.wgsl). */
export const MASKED_LOGIT = -3.0e38;
