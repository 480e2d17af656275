/**
 * Where the GPU time of a step goes (issue 22 §2): with `--profile`, the generation and training
 * sections time every kernel of some batch-1 decode steps and of one training step on their own
 * (profiler.ts kernel timing: one timestamped pass per kernel, where the adapter has
 * `timestamp-query`) and report, per kernel label: how many run per step, the mean GPU time of one,
 * and its share of the step's kernel time. `<graph>.rest` is what a step records after its
 * kernels in the same pass: the GPU sampler (decode).
 *
 * One pass per kernel places a barrier after every kernel, which one pass places only where a
 * buffer is shared: the sum is an upper bound of the step's GPU time, and the shares are the
 * point. Environment-agnostic. Not here: the timing itself (src/engine/gpu/profiler.ts).
 */
import type { PassTiming } from '../../src/engine/gpu/profiler';

export interface KernelShare {
  kernel: string;
  /** Calls per step. */
  perStep: number;
  /** Mean GPU time of one call, µs. */
  usEach: number;
  /** Of all the timed kernel time, 0..1. */
  share: number;
}

/** Timed passes of `steps` steps grouped by kernel label, largest share first. */
export function kernelShares(timings: readonly PassTiming[], steps: number): KernelShare[] {
  const by = new Map<string, { n: number; ns: number }>();
  for (const t of timings) {
    const e = by.get(t.label) ?? { n: 0, ns: 0 };
    e.n++;
    e.ns += t.ns;
    by.set(t.label, e);
  }
  const total = [...by.values()].reduce((s, e) => s + e.ns, 0) || 1;
  return [...by.entries()]
    .map(([kernel, e]) => ({ kernel, perStep: e.n / steps, usEach: e.ns / e.n / 1000, share: e.ns / total }))
    .sort((a, b) => b.share - a.share);
}

/** One profile as a markdown table, with the step's summed kernel time in the last row. */
export function profileTable(kernels: readonly KernelShare[]): string {
  const stepUs = kernels.reduce((s, k) => s + k.perStep * k.usEach, 0);
  return [
    '| kernel | per step | µs each | share |',
    '|---|---|---|---|',
    ...kernels.map((k) => `| ${k.kernel} | ${+k.perStep.toFixed(2)} | ${k.usEach.toFixed(1)} | ${(100 * k.share).toFixed(1)} % |`),
    `| all kernels of a step | ${+kernels.reduce((s, k) => s + k.perStep, 0).toFixed(2)} | ${stepUs.toFixed(0)} per step | 100 % |`,
  ].join('\n');
}
