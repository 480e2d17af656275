/**
 * Tile choice of the decode GEMV core (gemv-core.wgsl), shared by the generic GEMV and the fused
 * decode kernels.
 *
 * - WG = 256 invocations: enough loads in flight per workgroup on every GPU class
 *   (KernelContext.gemvWorkgroupSize: 64 on software adapters, where large workgroups are slow;
 *   there TK = 2 and RPT = 8 / BB as well, see gemvTile).
 * - TK (invocations per weight row): a power of two <= 32 so each invocation issues about 4
 *   eight-element loads per row per chunk; with rows of 576..8192 elements TK is 16..32, so a team's
 *   loads are 256..512 contiguous bytes (coalesced on NVIDIA/AMD/Apple/Intel).
 * - RPT (rows per invocation): 2 when the batch group is small, to reuse each staged activation from
 *   workgroup memory twice and keep two loads in flight; 1 with 8 batch rows (16 accumulators).
 * - BB (activation rows per workgroup): the batch rounded up to 1, 2, 4 or 8; more rows go to more
 *   workgroups along y, which reread the same weights from L2 (decode at B > 8 is compute-heavier and
 *   the prefill GEMM takes over past 64).
 * - KT (activations staged at once): BB * KT floats fill 8 KiB of workgroup memory (4 KiB on devices
 *   with the 16 KiB minimum), so at B = 1 a whole hidden state (<= 2048) is staged in one go.
 * - LOADS (eight-element loads per row an invocation issues before using any, 1 or 4): 4 on GPUs. A decode
 *   GEMV is bound by the loads in flight: on an H200 the fused kernels, one load at a time, streamed
 *   about 7 GB/s per workgroup (docs/performance.md "An H200 beside the peers"). 1 on software
 *   adapters, where the extra registers only cost.
 */
import type { KernelContext } from '../gpu/context';
import { pow2ceil, pow2floor } from './shader';

export interface GemvTile {
  WG: number;
  TK: number;
  TR: number;
  RPT: number;
  BB: number;
  KT: number;
  LOADS: number;
}

/** Floats of staged activations per workgroup for this device. */
export function stagingFloats(ctx: KernelContext): number {
  return ctx.maxWorkgroupStorage >= 24 * 1024 ? 2048 : 1024;
}

export function batchGroup(B: number): number {
  return Math.min(8, pow2ceil(B));
}

export function gemvTile(ctx: KernelContext, K: number, B: number, opts: { rpt?: number; tk?: number } = {}): GemvTile {
  const WG = ctx.gemvWorkgroupSize ?? 256;
  const kpad = Math.ceil(K / 8) * 8;
  const BB = batchGroup(B);
  // Small workgroups mean a software adapter (KernelContext.gemvWorkgroupSize): SwiftShader fills
  // every invocation's view of workgroup memory and pays per invocation, so few threads per row and
  // many rows per thread (TK 2, RPT 8 / BB) ran its decode kernels 3-10x faster than the GPU tiles.
  const software = WG < 256;
  const TK = Math.min(WG, opts.tk ?? (software ? 2 : Math.min(32, pow2floor(Math.max(1, kpad / 8 / 4)))));
  const RPT = opts.rpt ?? (software ? Math.max(2, 8 / BB) : BB <= 4 ? 2 : 1);
  const KT = Math.min(kpad, Math.floor(stagingFloats(ctx) / BB / 8) * 8);
  const LOADS = ctx.gemvLoads ?? (software ? 1 : 4);
  if (LOADS !== 1 && LOADS !== 4) throw new Error(`gemv: ${LOADS} loads in flight per row; the kernels issue 1 or 4`);
  return { WG, TK, TR: WG / TK, RPT, BB, KT, LOADS };
}

/** The tile as shader consts. */
export function tileConsts(t: GemvTile): Record<string, number> {
  return { WG: t.WG, TK: t.TK, TR: t.TR, RPT: t.RPT, BB: t.BB, KT: t.KT, LOADS: t.LOADS };
}

/** Workgroup bytes the GEMV core takes for a tile (xs, reduction scratch, ys, rstd). */
export function gemvCoreBytes(t: GemvTile): number {
  return 4 * (t.BB * t.KT + t.WG * t.BB + t.TR * t.RPT * t.BB + t.BB);
}

/**
 * The GEMV tile for a fused kernel whose own workgroup arrays take `extraBytes(BB)`: the batch group
 * is halved until everything fits the device's workgroup memory.
 */
export function fitTile(
  ctx: KernelContext,
  K: number,
  B: number,
  extraBytes: (BB: number) => number,
  label: string,
  opts: { rpt?: number; tk?: number } = {},
): GemvTile {
  for (let bb = batchGroup(B); bb >= 1; bb /= 2) {
    const t = gemvTile(ctx, K, bb, opts);
    if (gemvCoreBytes(t) + extraBytes(t.BB) <= ctx.maxWorkgroupStorage) return t;
  }
  throw new Error(`${label}: does not fit ${ctx.maxWorkgroupStorage} bytes of workgroup memory even for one batch row`);
}
