/**
 * PackedMatrix: a weight matrix [rows, cols] on the GPU in its file precision, packed in u32 words
 * (f32 as bit patterns; f16 / bf16 two per word, element 2i in the low half; a GGML block type as its
 * blocks, byte for byte as in the file), split into row chunks when it does not fit one binding. A
 * fused matrix whose parts differ in dtype (llama.cpp's Q4_K_M keeps attn_v in Q6_K beside Q4_K
 * attn_q / attn_k) is made of row segments, each in its part's dtype: a segment is chunked on its
 * own, so every chunk holds one dtype and kernels that loop over chunks (Gemv, Gemm) read each in
 * its own accessor, with no f32 copy. The layout every kernel that reads weights relies on:
 *
 * - Rows are `rowStride` elements apart (the chunk's dtype's) and element e of a chunk is element
 *   e % rowStride of row e / rowStride; the padding is zero. Kernels load 8 weights at a time with no
 *   bounds check along a row, at element indices that are multiples of 8.
 * - Plain floats: rowStride = cols rounded up to a multiple of 8, so each row starts on a 16-byte
 *   boundary (one vec4<u32> per 8 weights for 16-bit types, two for f32). Real models have cols a
 *   multiple of 64, so there is no padding in practice; test shapes exercise it.
 * - Block types: cols must be whole blocks (32 or 256 elements). Blocks follow each other with no gap,
 *   so element e lies in block e / blockSize at byte (e / blockSize) * typeSize and 8 weights at a
 *   multiple of 8 are always in one block. A row whose bytes are not a multiple of 4 (Q8_0's 34-byte
 *   blocks, an odd number of them) gets one zero block (which dequantizes to zeros) so every row starts
 *   on a u32 word and uploads stay 4-byte aligned. Blocks themselves need not be word-aligned: the
 *   accessors (kernels/packed-q*.wgsl) read the words they straddle.
 * - A chunk holds rows [rowStart, rowStart + rows) of one segment in its own buffer, row r of the
 *   chunk at element r * rowStride (of that buffer). Within a segment every chunk but the last has the
 *   same number of rows.
 *
 * Not here: which tensors exist or how they are fused (model/weights/weight-set.ts), unpacking (kernels/packed-*.wgsl).
 */
import type { DType } from '../tensor/dtype';
import { blockLayout, isBlockDType } from '../tensor/dtype';

export interface PackedChunk {
  buffer: GPUBuffer;
  /** First row of the matrix held by this chunk. */
  rowStart: number;
  rows: number;
  /** The dtype of these rows (their segment's). */
  dtype: DType;
  /** Elements per row on the GPU, and bytes per row (padding included), for this dtype. */
  rowStride: number;
  rowBytes: number;
}

/** Rows of a matrix in one dtype: a part of a fused matrix. */
export interface PackedSegment {
  dtype: DType;
  rows: number;
}

export interface PackedMatrixSpec {
  label: string;
  /** One dtype for every row, or row segments in order (their rows add up to `rows`). */
  dtype: DType | readonly PackedSegment[];
  rows: number;
  cols: number;
  /** Largest chunk in bytes (the binding limit, or smaller in tests); rounded down to whole rows. */
  chunkBytes: number;
}

/** Elements per row on the GPU of a plain float dtype: cols rounded up to 8 (16-byte aligned rows). */
export function rowStrideOf(cols: number): number {
  return Math.ceil(cols / 8) * 8;
}

/** Elements per row on the GPU and bytes per row, for any dtype (see the layout above). */
export function rowLayout(label: string, dtype: DType, cols: number): { rowStride: number; rowBytes: number } {
  const { blockSize, typeSize } = blockLayout(dtype);
  if (!isBlockDType(dtype)) return { rowStride: rowStrideOf(cols), rowBytes: rowStrideOf(cols) * typeSize };
  if (cols % blockSize !== 0) {
    throw new Error(`${label}: ${cols} columns are not whole ${dtype} blocks of ${blockSize} elements`);
  }
  // Blocks per row rounded up so the row is whole u32 words (typeSize is always even).
  const blocks = typeSize % 4 === 0 ? cols / blockSize : Math.ceil(cols / blockSize / 2) * 2;
  return { rowStride: blocks * blockSize, rowBytes: blocks * typeSize };
}

export class PackedMatrix {
  readonly label: string;
  readonly rows: number;
  readonly cols: number;
  /** The rows by dtype, in row order (adjacent parts of one dtype merged): one segment unless mixed. */
  readonly segments: readonly PackedSegment[];
  readonly chunks: PackedChunk[] = [];

  constructor(
    private readonly device: GPUDevice,
    spec: PackedMatrixSpec,
  ) {
    this.label = spec.label;
    this.rows = spec.rows;
    this.cols = spec.cols;
    const given = typeof spec.dtype === 'string' ? [{ dtype: spec.dtype, rows: spec.rows }] : spec.dtype;
    const segments: PackedSegment[] = [];
    for (const s of given) {
      const last = segments[segments.length - 1];
      if (last?.dtype === s.dtype) last.rows += s.rows;
      else segments.push({ ...s });
    }
    this.segments = segments;
    if (segments.reduce((n, s) => n + s.rows, 0) !== spec.rows) {
      throw new Error(`${spec.label}: segments of ${segments.map((s) => s.rows).join(' + ')} rows for ${spec.rows}`);
    }
    let segmentStart = 0;
    try {
      for (const seg of segments) {
        const { rowStride, rowBytes } = rowLayout(spec.label, seg.dtype, spec.cols);
        const perChunk = Math.min(seg.rows, Math.floor(spec.chunkBytes / rowBytes));
        if (perChunk < 1) throw new Error(`${spec.label}: one row is ${rowBytes} bytes, more than the chunk size ${spec.chunkBytes}`);
        for (let rowStart = segmentStart; rowStart < segmentStart + seg.rows; rowStart += perChunk) {
          const rows = Math.min(perChunk, segmentStart + seg.rows - rowStart);
          const buffer = device.createBuffer({
            label: this.chunks.length || rowStart + rows < spec.rows ? `${spec.label}#${this.chunks.length}` : spec.label,
            // Whole vec4<u32>s: a block-type chunk's rows need not add up to a multiple of 16 bytes.
            size: Math.ceil((rows * rowBytes) / 16) * 16,
            usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC,
          });
          this.chunks.push({ buffer, rowStart, rows, dtype: seg.dtype, rowStride, rowBytes });
        }
        segmentStart += seg.rows;
      }
    } catch (e) {
      this.destroy();
      throw e;
    }
  }

  /** Whether the rows are in more than one dtype (a fused matrix of parts in different dtypes). */
  get mixed(): boolean {
    return this.segments.length > 1;
  }

  /** The dtype of every row; a clear error for a mixed matrix (kernels that read one dtype). */
  get dtype(): DType {
    return this.uniform('dtype').dtype;
  }

  /** Elements per row on the GPU (every chunk's; a mixed matrix has one per segment: see chunks). */
  get rowStride(): number {
    return this.uniform('rowStride').rowStride;
  }

  /** Bytes of one row on the GPU (padding included; a mixed matrix has one per segment: see chunks). */
  get rowBytes(): number {
    return this.uniform('rowBytes').rowBytes;
  }

  private uniform(what: string): PackedChunk {
    if (this.mixed) {
      throw new Error(`${this.label}: ${what} of a matrix whose rows are in ${this.segments.map((s) => s.dtype).join(' and ')}`);
    }
    return this.chunks[0];
  }

  /** GPU bytes of all chunks (padding included). */
  get bytes(): number {
    return this.chunks.reduce((s, c) => s + c.buffer.size, 0);
  }

  /** The chunk holding `row` and the row's index inside it. */
  locate(row: number): { chunk: PackedChunk; index: number } {
    const chunk = this.chunks.find((c) => row >= c.rowStart && row < c.rowStart + c.rows);
    if (!chunk) throw new Error(`${this.label}: row ${row} beyond ${this.rows}`);
    return { chunk, index: row - chunk.rowStart };
  }

  /** The only chunk; a clear error when the matrix was split (kernels that need one binding). */
  single(what: string): GPUBuffer {
    if (this.chunks.length !== 1) {
      const why = this.mixed ? 'rows in several dtypes' : 'device binding limit';
      throw new Error(`${what}: ${this.label} is split in ${this.chunks.length} chunks (${why}); this kernel needs it in one binding`);
    }
    return this.chunks[0].buffer;
  }

  /**
   * Writes rows [rowStart, rowStart + n) from `data`: n * cols elements of those rows' dtype,
   * row-major, little-endian (whole blocks for a block type), all in one segment. Rows are padded to
   * rowStride with zeros and spread over the chunks.
   */
  writeRows(rowStart: number, data: Uint8Array): void {
    const first = this.locate(rowStart).chunk;
    const { blockSize, typeSize } = blockLayout(first.dtype);
    const srcRow = (this.cols / blockSize) * typeSize;
    if (data.byteLength % srcRow !== 0) throw new Error(`${this.label}: ${data.byteLength} bytes is not a whole number of rows`);
    const n = data.byteLength / srcRow;
    if (rowStart + n > this.rows) throw new Error(`${this.label}: rows ${rowStart}..${rowStart + n} beyond ${this.rows}`);
    let row = rowStart;
    while (row < rowStart + n) {
      const { chunk, index } = this.locate(row);
      if (chunk.dtype !== first.dtype)
        throw new Error(`${this.label}: rows ${rowStart}..${rowStart + n} span ${first.dtype} and ${chunk.dtype}`);
      const dstRow = chunk.rowBytes;
      const count = Math.min(chunk.rows - index, rowStart + n - row);
      const src = data.subarray((row - rowStart) * srcRow, (row - rowStart + count) * srcRow);
      if (srcRow === dstRow) {
        this.device.queue.writeBuffer(chunk.buffer, index * dstRow, src);
      } else {
        const padded = new Uint8Array(count * dstRow);
        for (let r = 0; r < count; r++) padded.set(src.subarray(r * srcRow, (r + 1) * srcRow), r * dstRow);
        this.device.queue.writeBuffer(chunk.buffer, index * dstRow, padded);
      }
      row += count;
    }
  }

  destroy(): void {
    for (const c of this.chunks) c.buffer.destroy();
  }
}
