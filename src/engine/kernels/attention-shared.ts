/**
 * Pieces shared by the attention-family wrappers (qkv-prep, prefill, decode, merge): the common
 * WGSL snippet, content-keyed uniform buffers, and small checks.
 *
 * Not here: kernels (one file per kernel), the KV cache buffers (model/kv-cache.ts).
 */
import commonWgsl from './attention-common.wgsl?raw';

/** The paged-cache WGSL helpers (BatchRow, KV_BLOCK, kv_index) followed by a kernel's own code. */
export function withCommon(code: string): string {
  return `${commonWgsl}\n${code}`;
}

/**
 * Uniform buffers keyed on their exact bytes. A step's attention parameters are the same for all
 * layers, so one buffer serves every dispatch of the step; a buffer's content never changes after
 * creation, so a later writeBuffer can never race an earlier, not yet executed, dispatch.
 * Old entries are destroyed past `capacity` (destroy is safe once the work using them was submitted).
 */
export class ParamsCache {
  private readonly entries = new Map<string, GPUBuffer>();

  constructor(
    private readonly device: GPUDevice,
    private readonly label: string,
    private readonly capacity = 64,
  ) {}

  /** A uniform buffer holding `bytes` (an ArrayBuffer of 4-byte words, padded to 16 bytes). */
  get(bytes: ArrayBuffer): GPUBuffer {
    const words = new Uint32Array(bytes);
    const key = words.join(',');
    const hit = this.entries.get(key);
    if (hit) {
      this.entries.delete(key);
      this.entries.set(key, hit);
      return hit;
    }
    const size = Math.max(16, Math.ceil(bytes.byteLength / 16) * 16);
    const buffer = this.device.createBuffer({ label: this.label, size, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
    this.device.queue.writeBuffer(buffer, 0, words);
    this.entries.set(key, buffer);
    if (this.entries.size > this.capacity) {
      const [oldKey, old] = this.entries.entries().next().value as [string, GPUBuffer];
      this.entries.delete(oldKey);
      old.destroy();
    }
    return buffer;
  }

  destroy(): void {
    for (const b of this.entries.values()) b.destroy();
    this.entries.clear();
  }
}

/** Writes u32/f32 fields into one ArrayBuffer: `fields` are [kind, value] in WGSL struct order. */
export function packParams(fields: ReadonlyArray<readonly ['u32' | 'f32', number]>, extraWords = 0): ArrayBuffer {
  const buf = new ArrayBuffer((fields.length + extraWords) * 4);
  const u = new Uint32Array(buf);
  const f = new Float32Array(buf);
  fields.forEach(([kind, value], i) => {
    if (kind === 'u32') {
      if (!Number.isInteger(value) || value < 0 || value > 0xffffffff) throw new Error(`params: ${value} is not a u32`);
      u[i] = value;
    } else f[i] = value;
  });
  return buf;
}

/** Workgroup-storage bytes a kernel may use: the device limit unless a smaller one is forced (tests). */
export function workgroupStorageBudget(device: GPUDevice, forced?: number): number {
  const limit = device.limits.maxComputeWorkgroupStorageSize;
  if (forced === undefined) return limit;
  if (forced > limit) throw new Error(`workgroup storage ${forced} exceeds the device limit ${limit}`);
  return forced;
}

/** Largest divisor of n that is <= cap (at least 1). */
export function largestDivisorAtMost(n: number, cap: number): number {
  for (let d = Math.min(n, Math.max(1, Math.floor(cap))); d > 1; d--) if (n % d === 0) return d;
  return 1;
}

export function assertDispatch(device: GPUDevice, label: string, x: number, y: number, z: number): void {
  const max = device.limits.maxComputeWorkgroupsPerDimension;
  if (x > max || y > max || z > max) throw new Error(`${label}: dispatch (${x}, ${y}, ${z}) exceeds ${max} workgroups per dimension`);
}

/** Splits n workgroups over x and y so neither exceeds the per-dimension limit. */
export function grid2d(device: GPUDevice, n: number): [number, number] {
  const max = device.limits.maxComputeWorkgroupsPerDimension;
  if (n <= max) return [Math.max(1, n), 1];
  const y = Math.ceil(n / max);
  return [Math.ceil(n / y), y];
}
