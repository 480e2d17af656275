/**
 * PackedMatrix: a weight matrix [rows, cols] on the GPU in its file precision, packed in u32 words
 * (f32 as bit patterns; f16 / bf16 two per word, element 2i in the low half), split into row chunks
 * when it does not fit one binding. The layout every kernel that reads weights relies on:
 *
 * - Each row starts on a 16-byte boundary: rows are `rowStride` elements apart, rowStride = cols
 *   rounded up to a multiple of 8, the padding is zero. Kernels then load 8 weights at a time
 *   (one vec4<u32> for 16-bit types, two for f32) with no bounds check along a row. Real models have
 *   cols a multiple of 64, so there is no padding in practice; test shapes exercise it.
 * - Chunk c holds rows [c * rowsPerChunk, ...) in its own buffer, row r of the chunk at element
 *   r * rowStride (of that buffer). Every chunk but the last has exactly rowsPerChunk rows.
 *
 * Not here: which tensors exist or how they are fused (model/weights.ts), unpacking (kernels/packed-*.wgsl).
 */
import type { DType } from '../model/config';
import { bytesPerElement } from '../model/tensor';

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

/** Elements per row on the GPU: cols rounded up to 8 (16-byte aligned rows for every dtype). */
export function rowStrideOf(cols: number): number {
  return Math.ceil(cols / 8) * 8;
}

export class PackedMatrix {
  readonly label: string;
  readonly dtype: DType;
  readonly rows: number;
  readonly cols: number;
  readonly rowStride: number;
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
    this.rowStride = rowStrideOf(spec.cols);
    const rowBytes = this.rowStride * bytesPerElement(spec.dtype);
    this.rowsPerChunk = Math.min(spec.rows, Math.floor(spec.chunkBytes / rowBytes));
    if (this.rowsPerChunk < 1) {
      throw new Error(`${spec.label}: one row is ${rowBytes} bytes, more than the chunk size ${spec.chunkBytes}`);
    }
    for (let rowStart = 0; rowStart < spec.rows; rowStart += this.rowsPerChunk) {
      const rows = Math.min(this.rowsPerChunk, spec.rows - rowStart);
      const buffer = device.createBuffer({
        label: this.chunks.length || rowStart + rows < spec.rows ? `${spec.label}#${this.chunks.length}` : spec.label,
        size: rows * rowBytes,
        usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC,
      });
      this.chunks.push({ buffer, rowStart, rows });
    }
  }

  /** Bytes per element in the file dtype. */
  get elementBytes(): number {
    return bytesPerElement(this.dtype);
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
   * little-endian. Rows are padded to rowStride with zeros and spread over the chunks.
   */
  writeRows(rowStart: number, data: Uint8Array): void {
    const eb = this.elementBytes;
    const srcRow = this.cols * eb;
    const dstRow = this.rowStride * eb;
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
