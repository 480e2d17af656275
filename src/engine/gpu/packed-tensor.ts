/**
 * PackedMatrix: a weight matrix [rows, cols] on the GPU in its file precision, packed in u32 words
 * (f32 as bit patterns; f16 / bf16 two per word, element 2i in the low half; a GGML block type as its
 * blocks, byte for byte as in the file), split into row chunks when it does not fit one binding. The
 * layout every kernel that reads weights relies on:
 *
 * - Rows are `rowStride` elements apart and element e of a chunk is element e % rowStride of row
 *   e / rowStride; the padding is zero. Kernels load 8 weights at a time with no bounds check along a
 *   row, at element indices that are multiples of 8.
 * - Plain floats: rowStride = cols rounded up to a multiple of 8, so each row starts on a 16-byte
 *   boundary (one vec4<u32> per 8 weights for 16-bit types, two for f32). Real models have cols a
 *   multiple of 64, so there is no padding in practice; test shapes exercise it.
 * - Block types: cols must be whole blocks (32 or 256 elements). Blocks follow each other with no gap,
 *   so element e lies in block e / blockSize at byte (e / blockSize) * typeSize and 8 weights at a
 *   multiple of 8 are always in one block. A row whose bytes are not a multiple of 4 (Q8_0's 34-byte
 *   blocks, an odd number of them) gets one zero block (which dequantizes to zeros) so every row starts
 *   on a u32 word and uploads stay 4-byte aligned. Blocks themselves need not be word-aligned: the
 *   accessors (kernels/packed-q*.wgsl) read the words they straddle.
 * - Chunk c holds rows [c * rowsPerChunk, ...) in its own buffer, row r of the chunk at element
 *   r * rowStride (of that buffer). Every chunk but the last has exactly rowsPerChunk rows.
 *
 * Not here: which tensors exist or how they are fused (model/weights.ts), unpacking (kernels/packed-*.wgsl).
 */
import type { DType } from '../model/config';
import { blockLayout, isBlockDType } from '../model/tensor';

export interface PackedChunk {
  buffer: GPUBuffer;
  /** First row of the matrix held by this chunk. */
  rowStart: number;
  rows: number;
}

export interface PackedMatrixSpec {
  label: string;
  dtype: DType;
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
  readonly dtype: DType;
  readonly rows: number;
  readonly cols: number;
  readonly rowStride: number;
  /** Bytes of one row on the GPU (padding included). */
  readonly rowBytes: number;
  readonly rowsPerChunk: number;
  readonly chunks: PackedChunk[] = [];

  constructor(
    private readonly device: GPUDevice,
    spec: PackedMatrixSpec,
  ) {
    this.label = spec.label;
    this.dtype = spec.dtype;
    this.rows = spec.rows;
    this.cols = spec.cols;
    const { rowStride, rowBytes } = rowLayout(spec.label, spec.dtype, spec.cols);
    this.rowStride = rowStride;
    this.rowBytes = rowBytes;
    this.rowsPerChunk = Math.min(spec.rows, Math.floor(spec.chunkBytes / rowBytes));
    if (this.rowsPerChunk < 1) {
      throw new Error(`${spec.label}: one row is ${rowBytes} bytes, more than the chunk size ${spec.chunkBytes}`);
    }
    for (let rowStart = 0; rowStart < spec.rows; rowStart += this.rowsPerChunk) {
      const rows = Math.min(this.rowsPerChunk, spec.rows - rowStart);
      const buffer = device.createBuffer({
        label: this.chunks.length || rowStart + rows < spec.rows ? `${spec.label}#${this.chunks.length}` : spec.label,
        // Whole vec4<u32>s: a block-type chunk's rows need not add up to a multiple of 16 bytes.
        size: Math.ceil((rows * rowBytes) / 16) * 16,
        usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC,
      });
      this.chunks.push({ buffer, rowStart, rows });
    }
  }

  /** GPU bytes of all chunks (padding included). */
  get bytes(): number {
    return this.chunks.reduce((s, c) => s + c.buffer.size, 0);
  }

  /** The chunk holding `row` and the row's index inside it. */
  locate(row: number): { chunk: PackedChunk; index: number } {
    const c = Math.floor(row / this.rowsPerChunk);
    return { chunk: this.chunks[c], index: row - this.chunks[c].rowStart };
  }

  /** The only chunk; a clear error when the matrix was split (kernels that need one binding). */
  single(what: string): GPUBuffer {
    if (this.chunks.length !== 1) {
      throw new Error(
        `${what}: ${this.label} is split in ${this.chunks.length} chunks (device binding limit); this kernel needs it in one binding`,
      );
    }
    return this.chunks[0].buffer;
  }

  /**
   * Writes rows [rowStart, rowStart + n) from `data`: n * cols elements of this dtype, row-major,
   * little-endian (whole blocks for a block type). Rows are padded to rowStride with zeros and spread
   * over the chunks.
   */
  writeRows(rowStart: number, data: Uint8Array): void {
    const { blockSize, typeSize } = blockLayout(this.dtype);
    const srcRow = (this.cols / blockSize) * typeSize;
    const dstRow = this.rowBytes;
    if (data.byteLength % srcRow !== 0) throw new Error(`${this.label}: ${data.byteLength} bytes is not a whole number of rows`);
    const n = data.byteLength / srcRow;
    if (rowStart + n > this.rows) throw new Error(`${this.label}: rows ${rowStart}..${rowStart + n} beyond ${this.rows}`);
    let row = rowStart;
    while (row < rowStart + n) {
      const { chunk, index } = this.locate(row);
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
