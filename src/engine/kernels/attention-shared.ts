/**
 * Pieces shared by the attention-family wrappers (qkv-prep, prefill, decode, merge): the common
 * WGSL snippet (BatchRow, KV_BLOCK, paged-cache addressing) and small sizing helpers.
 *
 * Not here: kernels (one file per kernel), the KV cache buffers (model/kv-cache.ts), the generic
 * wrapper helpers every kernel family uses (spec-kernel.ts, gpu/kernel-call.ts).
 */
import type { KernelContext } from '../gpu/context';
import commonWgsl from './attention-common.wgsl?raw';

/** The paged-cache WGSL helpers (BatchRow, KV_BLOCK, kv_index), put before a kernel's own code. */
export const ATTENTION_COMMON_WGSL = commonWgsl;

/** Workgroup-storage bytes a kernel may plan for: the device limit unless a smaller one is forced (tests). */
export function workgroupStorageBudget(ctx: KernelContext, forced?: number): number {
  if (forced === undefined) return ctx.maxWorkgroupStorage;
  if (forced > ctx.maxWorkgroupStorage) throw new Error(`workgroup storage ${forced} exceeds the device limit ${ctx.maxWorkgroupStorage}`);
  return forced;
}

/** Largest divisor of n that is <= cap (at least 1). */
export function largestDivisorAtMost(n: number, cap: number): number {
  for (let d = Math.min(n, Math.max(1, Math.floor(cap))); d > 1; d--) if (n % d === 0) return d;
  return 1;
}

/** Splits n workgroups over x and y so neither exceeds the per-dimension limit (flat index y * nx + x). */
export function grid2d(ctx: KernelContext, n: number): [number, number, number] {
  const max = ctx.maxWorkgroupsPerDimension;
  if (n <= max) return [Math.max(1, n), 1, 1];
  const y = Math.ceil(n / max);
  return [Math.ceil(n / y), y, 1];
}
