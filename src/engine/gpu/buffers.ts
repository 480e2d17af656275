/**
 * Buffer helpers: creation with 4-byte rounding, uploads, and readback for tests and for the
 * few values the engine must bring back (token ids, requested logprobs).
 *
 * Not here: the weight layout (WeightTensor, row chunking) or the KV cache; see the kernels and
 * generate/ for those.
 */

export const STORAGE = GPUBufferUsageFlags();

/** Usage flags, read lazily: GPUBufferUsage is a global that exists only once WebGPU is loaded. */
function GPUBufferUsageFlags() {
  return {
    get rw(): number {
      return GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC;
    },
    get uniform(): number {
      return GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST;
    },
    get readback(): number {
      return GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST;
    },
  };
}

export function alignTo(n: number, alignment: number): number {
  return Math.ceil(n / alignment) * alignment;
}

/** A storage buffer of at least `bytes` bytes (rounded up to 16, never zero-sized). */
export function createStorage(device: GPUDevice, bytes: number, label: string): GPUBuffer {
  return device.createBuffer({ label, size: Math.max(16, alignTo(bytes, 16)), usage: STORAGE.rw });
}

/** A storage buffer initialised with `data` (padded with zeros to a multiple of 4 bytes). */
export function uploadStorage(device: GPUDevice, data: ArrayBufferView, label: string): GPUBuffer {
  const buffer = createStorage(device, data.byteLength, label);
  writeBytes(device, buffer, 0, data);
  return buffer;
}

/** queue.writeBuffer needs offset and size in multiples of 4; pad the tail of odd-sized data. */
export function writeBytes(device: GPUDevice, buffer: GPUBuffer, offset: number, data: ArrayBufferView): void {
  const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  const whole = bytes.byteLength & ~3;
  if (whole > 0) device.queue.writeBuffer(buffer, offset, bytes, 0, whole);
  if (whole < bytes.byteLength) {
    const tail = new Uint8Array(4);
    tail.set(bytes.subarray(whole));
    device.queue.writeBuffer(buffer, offset + whole, tail);
  }
}

/** Copies `bytes` bytes of `src` back to the CPU. Costly (a mapAsync round trip): tests and small results only. */
export async function readBytes(device: GPUDevice, src: GPUBuffer, bytes: number, srcOffset = 0): Promise<ArrayBuffer> {
  const size = alignTo(bytes, 4);
  const staging = device.createBuffer({ label: 'readback', size, usage: STORAGE.readback });
  const encoder = device.createCommandEncoder({ label: 'readback' });
  encoder.copyBufferToBuffer(src, srcOffset, staging, 0, size);
  device.queue.submit([encoder.finish()]);
  await staging.mapAsync(GPUMapMode.READ);
  const out = staging.getMappedRange().slice(0, bytes);
  staging.unmap();
  staging.destroy();
  return out;
}

export async function readF32(device: GPUDevice, src: GPUBuffer, count: number, srcOffset = 0): Promise<Float32Array> {
  return new Float32Array(await readBytes(device, src, count * 4, srcOffset));
}

export async function readU32(device: GPUDevice, src: GPUBuffer, count: number, srcOffset = 0): Promise<Uint32Array> {
  return new Uint32Array(await readBytes(device, src, count * 4, srcOffset));
}
