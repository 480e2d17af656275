// Shared set-up of the dense-kernel GPU tests: a KernelContext on Dawn (SwiftShader without a GPU),
// with or without subgroups, and uploads of seeded random matrices in every weight dtype.
import { createStorage, readBytes, readF32, uploadStorage } from '../../src/engine/gpu/buffers';
import type { KernelContext } from '../../src/engine/gpu/context';
import { createKernelContext } from '../../src/engine/gpu/context';
import { acquireGpu } from '../../src/engine/gpu/device';
import { nodeGpu } from '../../src/engine/gpu/node-gpu';
import { PackedMatrix } from '../../src/engine/gpu/packed-tensor';
import type { DType } from '../../src/engine/tensor/dtype';
import { encodeFromF32, roundToDtype } from '../../src/engine/tensor/dtype';
import { blockLayout } from '../../src/engine/tensor/dtype';

export const DTYPES: DType[] = ['f32', 'f16', 'bf16'];

/** Tolerances per weight dtype: products of rounded weights with f32 activations, f32 accumulation. */
export const TOL = { atol: 2e-4, rtol: 2e-4 };

const contexts = new Map<string, Promise<KernelContext>>();

/** A context per feature set; `subgroups: false` forces the shared-memory reduction paths. */
export function kernelContext(opts: { subgroups?: boolean } = {}): Promise<KernelContext> {
  const key = `sg=${opts.subgroups ?? true}`;
  let ctx = contexts.get(key);
  if (!ctx) {
    ctx = (async () => {
      const gpu = await acquireGpu(await nodeGpu(), { disableFeatures: opts.subgroups === false ? ['subgroups'] : [] });
      return createKernelContext(gpu);
    })();
    contexts.set(key, ctx);
  }
  return ctx;
}

export async function destroyContexts(): Promise<void> {
  for (const c of contexts.values()) (await c).device.destroy();
  contexts.clear();
}

export function upload(ctx: KernelContext, data: Float32Array | Uint32Array, label = 'test'): GPUBuffer {
  return uploadStorage(ctx.device, data, label);
}

export function zeros(ctx: KernelContext, count: number, label = 'out'): GPUBuffer {
  return createStorage(ctx.device, count * 4, label);
}

export function read(ctx: KernelContext, buffer: GPUBuffer, count: number, offset = 0): Promise<Float32Array> {
  return readF32(ctx.device, buffer, count, offset * 4);
}

/** Uploads values [rows, cols] as a packed matrix of `dtype`; returns it and the values it holds. */
export function packedMatrix(
  ctx: KernelContext,
  values: Float32Array,
  rows: number,
  cols: number,
  dtype: DType,
  chunkBytes = 1 << 30,
): { matrix: PackedMatrix; ref: Float32Array } {
  const matrix = new PackedMatrix(ctx.device, { label: `w[${rows}x${cols}]`, dtype, rows, cols, chunkBytes });
  matrix.writeRows(0, encodeFromF32(values, dtype));
  return { matrix, ref: roundToDtype(values, dtype) };
}

/** Rows [r0, r0 + n) of a packed matrix as their bytes in the file layout (padding dropped), one dtype. */
export async function readMatrixRows(device: GPUDevice, m: PackedMatrix, r0: number, n: number): Promise<Uint8Array> {
  const { blockSize, typeSize } = blockLayout(m.locate(r0).chunk.dtype);
  const rowBytes = (m.cols / blockSize) * typeSize;
  const out = new Uint8Array(n * rowBytes);
  for (let r = r0; r < r0 + n; r++) {
    const { chunk, index } = m.locate(r);
    const bytes = new Uint8Array(await readBytes(device, chunk.buffer, Math.ceil(rowBytes / 4) * 4, index * chunk.rowBytes));
    out.set(bytes.subarray(0, rowBytes), (r - r0) * rowBytes);
  }
  return out;
}
