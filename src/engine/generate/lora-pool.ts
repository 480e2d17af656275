/**
 * LoraPool: the LoRA adapters resident on the GPU for one base model, so that a batch can mix them
 * (every row names its slot; kernels/lora.ts reads the pool through the slot table).
 *
 * - One f32 buffer holds every resident adapter, each in one contiguous range laid out by
 *   `loraLayout` (all seven modules of every layer; modules the adapter does not target are zeros,
 *   so the kernels need no per-module flags). Ranges are first-fit in a free list, 256-byte aligned.
 * - A slot table (base, rank, scale) of `maxSlots` entries; adapters are keyed by
 *   LoraAdapter.key.
 * - Residency is LRU among adapters no running sequence uses (`acquire` / `release` count users):
 *   an upload evicts the least recently used free adapters until its range fits. When everything
 *   that could be evicted has been and the range still does not fit, the caller waits (`null`);
 *   an adapter larger than the whole pool is an error.
 *
 * Not here: reading adapters from storage (LoraAdapter.load, the service), scheduling.
 */
import { writeBytes } from '../gpu/buffers';
import { LORA_MAX_RANK, LORA_SLOT, LORA_SLOT_BYTES, loraSlotFloats, type LoraLayout } from '../kernels/lora';
import { packStructs } from '../kernels/spec';
import type { ModelConfig } from '../model/config/model-config';
import { tensorToF32 } from '../tensor/tensor-data';
import type { TensorData } from '../tensor/tensor-data';
import { groupLoraTensors } from '../model/lora/adapter-tensors';
import { loraScale, type LoraConfig } from '../model/lora/lora-config';
import type { LoraModule } from '../model/lora/peft-modules';
import { loraLayout } from './lora-layout';

/** Floats a range is aligned to: 256 bytes. */
const ALIGN = 64;

export interface LoraPoolOptions {
  /** Bytes of the pool buffer (capped by the binding limit). Default 256 MiB. */
  poolBytes?: number;
  /** Adapters resident at once. Default 16. */
  maxSlots?: number;
}

interface Resident {
  key: string;
  slot: number;
  base: number;
  floats: number;
  users: number;
  lastUse: number;
}

export class LoraPoolFullError extends Error {
  override name = 'LoraPoolFullError';
}

export class LoraPool {
  readonly layout: LoraLayout;
  readonly pool: GPUBuffer;
  readonly slots: GPUBuffer;
  readonly capacityFloats: number;
  readonly maxSlots: number;
  private readonly resident = new Map<string, Resident>();
  private readonly bySlot: (Resident | undefined)[];
  /** Free ranges [start, length] in floats, sorted by start, coalesced. */
  private free: Array<[number, number]>;
  private clock = 0;

  constructor(
    private readonly device: GPUDevice,
    readonly config: ModelConfig,
    opts: LoraPoolOptions = {},
  ) {
    this.layout = loraLayout(config);
    const limit = Math.min(device.limits.maxStorageBufferBindingSize, device.limits.maxBufferSize);
    const bytes = Math.floor(Math.min(opts.poolBytes ?? 256 * 1024 * 1024, limit) / (4 * ALIGN)) * 4 * ALIGN;
    this.capacityFloats = bytes / 4;
    this.maxSlots = opts.maxSlots ?? 16;
    const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST;
    this.pool = device.createBuffer({ label: 'lora.pool', size: Math.max(16, bytes), usage });
    this.slots = device.createBuffer({ label: 'lora.slots', size: this.maxSlots * LORA_SLOT_BYTES, usage });
    this.bySlot = new Array(this.maxSlots).fill(undefined);
    this.free = [[0, this.capacityFloats]];
  }

  /** Bytes of GPU memory held. */
  get bytes(): number {
    return this.pool.size + this.slots.size;
  }

  /** The slot of a resident adapter (marked as just used), or undefined. */
  slotOf(key: string): number | undefined {
    const r = this.resident.get(key);
    if (r) r.lastUse = ++this.clock;
    return r?.slot;
  }

  has(key: string): boolean {
    return this.resident.has(key);
  }

  /** A sequence starts using a resident adapter: it cannot be evicted until `release`. */
  acquire(key: string): number {
    const r = this.resident.get(key);
    if (!r) throw new Error(`LoraPool: adapter ${key} is not resident`);
    r.users++;
    r.lastUse = ++this.clock;
    return r.slot;
  }

  release(key: string): void {
    const r = this.resident.get(key);
    if (!r || r.users === 0) throw new Error(`LoraPool: adapter ${key} released more often than acquired`);
    r.users--;
  }

  /**
   * Checks an adapter against the model and writes it into a free range, evicting unused adapters
   * (least recently used first) as needed. Returns its slot, or null when the pool is full of
   * adapters in use (try again when some are released). Throws when the adapter is invalid or can
   * never fit.
   */
  upload(key: string, config: LoraConfig, tensors: readonly TensorData[]): number | null {
    const existing = this.resident.get(key);
    if (existing) return existing.slot;
    const rank = config.rank;
    if (!Number.isInteger(rank) || rank < 1 || rank > LORA_MAX_RANK) {
      throw new Error(`LoRA adapter ${key}: rank ${rank} is outside 1..${LORA_MAX_RANK}, the ranks Hearth's LoRA kernels take`);
    }
    const grouped = groupLoraTensors(this.config, rank, tensors);
    const floats = Math.ceil(loraSlotFloats(this.layout, rank) / ALIGN) * ALIGN;
    if (floats > this.capacityFloats) {
      throw new LoraPoolFullError(
        `LoRA adapter ${key} needs ${floats * 4} bytes of GPU memory, more than the whole adapter pool (${this.capacityFloats * 4})`,
      );
    }
    let slot = this.bySlot.findIndex((r) => r === undefined);
    let base = this.findRange(floats);
    while (slot < 0 || base < 0) {
      const victim = this.leastRecentlyUsedFree();
      if (!victim) return null;
      this.evict(victim);
      if (slot < 0) slot = this.bySlot.findIndex((r) => r === undefined);
      base = this.findRange(floats);
    }
    this.take(base, floats);
    const data = new Float32Array(loraSlotFloats(this.layout, rank));
    const { layerUnits } = this.layout;
    for (const [id, { A, B }] of grouped) {
      const [l, module] = id.split('.') as [string, LoraModule];
      const m = this.layout.modules[module]; // groupLoraTensors kept only the model's modules
      const unitBase = Number(l) * layerUnits;
      data.set(tensorToF32(A), rank * (unitBase + m.aUnits));
      data.set(tensorToF32(B), rank * (unitBase + m.bUnits));
    }
    writeBytes(this.device, this.pool, base * 4, data);
    const entry = packStructs(LORA_SLOT, [{ base, rank, scale: loraScale(config.alpha, rank, config.useRslora) }]);
    this.device.queue.writeBuffer(this.slots, slot * LORA_SLOT_BYTES, entry);
    const r: Resident = { key, slot, base, floats, users: 0, lastUse: ++this.clock };
    this.resident.set(key, r);
    this.bySlot[slot] = r;
    return slot;
  }

  /** Drops an adapter no sequence uses (e.g. its checkpoint was deleted); false if in use or absent. */
  evictKey(key: string): boolean {
    const r = this.resident.get(key);
    if (!r || r.users > 0) return false;
    this.evict(r);
    return true;
  }

  destroy(): void {
    this.pool.destroy();
    this.slots.destroy();
  }

  private leastRecentlyUsedFree(): Resident | undefined {
    let best: Resident | undefined;
    for (const r of this.resident.values()) if (r.users === 0 && (!best || r.lastUse < best.lastUse)) best = r;
    return best;
  }

  private evict(r: Resident): void {
    this.resident.delete(r.key);
    this.bySlot[r.slot] = undefined;
    this.free.push([r.base, r.floats]);
    this.free.sort((a, b) => a[0] - b[0]);
    const merged: Array<[number, number]> = [];
    for (const [s, n] of this.free) {
      const last = merged[merged.length - 1];
      if (last && last[0] + last[1] === s) last[1] += n;
      else merged.push([s, n]);
    }
    this.free = merged;
  }

  private findRange(floats: number): number {
    return this.free.find(([, n]) => n >= floats)?.[0] ?? -1;
  }

  private take(start: number, floats: number): void {
    const i = this.free.findIndex(([s]) => s === start);
    const [, n] = this.free[i];
    if (n === floats) this.free.splice(i, 1);
    else this.free[i] = [start + floats, n - floats];
  }
}
