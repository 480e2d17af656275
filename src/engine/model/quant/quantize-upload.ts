/**
 * Quantize on load on the GPU: a float tensor of the file (f32, f16, bf16) written as Q8_0 or Q4_K
 * blocks into rows of a PackedMatrix by the QuantizeBlocks kernels (kernels/quantize-blocks.ts). The
 * source goes to one staging buffer (the tensor's bytes, or the device's binding limit when that is
 * smaller), one slice of rows at a time, each slice inside one destination chunk; the staging buffer
 * is freed when the tensor is done, so the GPU holds at most one tensor's source beside the blocks.
 *
 * Not here: which tensors are quantized (quantize-on-load.ts), the CPU quantizer that is the kernels'
 * reference and serves where there is no GPU (quantize.ts), the matrix layout (gpu/packed-tensor.ts).
 */
import type { KernelContext } from '../../gpu/context';
import { runCalls } from '../../gpu/kernel-call';
import type { PackedMatrix } from '../../gpu/packed-tensor';
import { QuantizeBlocks } from '../../kernels/quantize-blocks';
import type { QuantizeTarget } from '../../tensor/dtype';
import { blockLayout } from '../../tensor/dtype';
import { type TensorData } from '../../tensor/tensor-data';

export class GpuQuantizer {
  private readonly kernel: QuantizeBlocks;

  constructor(private readonly ctx: KernelContext) {
    this.kernel = new QuantizeBlocks(ctx);
  }

  /** Writes `t` ([rows, matrix.cols], a float dtype) as `dtype` blocks into rows rowStart.. of `matrix`. */
  async writeRows(matrix: PackedMatrix, rowStart: number, t: TensorData, dtype: QuantizeTarget): Promise<void> {
    const [rows, cols] = t.shape;
    const label = `quantize ${t.name}`;
    if (t.shape.length !== 2 || cols !== matrix.cols) throw new Error(`${label}: shape [${t.shape.join(', ')}] for ${matrix.cols} columns`);
    const srcRowBytes = cols * blockLayout(t.dtype).typeSize;
    if (t.data.byteLength !== rows * srcRowBytes) throw new Error(`${label}: ${t.data.byteLength} bytes for ${rows} rows of ${t.dtype}`);
    const limit = Math.min(this.ctx.maxStorageBindingSize, this.ctx.maxBufferSize);
    const sliceRows = Math.min(rows, Math.floor(limit / srcRowBytes));
    if (sliceRows < 1) throw new Error(`${label}: one row is ${srcRowBytes} bytes, more than a binding holds (${limit})`);
    const staging = this.ctx.device.createBuffer({
      label: `${label}.staging`,
      size: Math.ceil((sliceRows * srcRowBytes) / 16) * 16,
      usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST,
    });
    try {
      for (let r = 0; r < rows;) {
        const { chunk, index } = matrix.locate(rowStart + r);
        if (chunk.dtype !== dtype)
          throw new Error(`${label}: rows of ${matrix.label} from ${rowStart + r} are ${chunk.dtype}, not ${dtype}`);
        const n = Math.min(sliceRows, rows - r, chunk.rows - index);
        this.ctx.device.queue.writeBuffer(staging, 0, t.data, r * srcRowBytes, n * srcRowBytes);
        const call = this.kernel.encode({
          out: chunk.buffer,
          outOffset: (index * chunk.rowBytes) / 4,
          outStride: chunk.rowBytes / 4,
          src: staging,
          srcDtype: t.dtype,
          dtype,
          rows: n,
          cols,
        });
        // Waits for each slice: the staging buffer is rewritten for the next, and the worker's other
        // tasks run meanwhile.
        await runCalls(this.ctx, [...call], label);
        r += n;
      }
    } finally {
      staging.destroy();
    }
  }
}
