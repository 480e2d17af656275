import { afterAll, describe, expect, it } from 'vitest';
import { createKernelContext } from '../../src/engine/gpu/context';
import { acquireGpu } from '../../src/engine/gpu/device';
import { runCalls } from '../../src/engine/gpu/kernel-call';
import { nodeGpu } from '../../src/engine/gpu/node-gpu';
import { AddInto } from '../../src/engine/kernels/add';
import { createDenseKernels } from '../../src/engine/kernels/registry';
import { destroyContexts, read, upload } from './dense-helpers';

afterAll(destroyContexts);

describe('profiler', () => {
  it('counts dispatches per kernel label and submissions, and times passes with timestamp queries', async () => {
    const gpu = await acquireGpu(await nodeGpu());
    const ctx = createKernelContext(gpu, { timestamps: true });
    const add = new AddInto(ctx);
    const out = upload(ctx, new Float32Array(4096));
    const inp = upload(ctx, new Float32Array(4096).fill(1));
    await runCalls(
      ctx,
      [...add.encode({ out, inp, n: 4096 }), ...add.encode({ out, inp, n: 4096 }), ...add.encode({ out, inp, n: 100 })],
      'adds',
    );
    expect(ctx.profiler.counts()).toEqual({ dispatches: 3, submissions: 1, byLabel: { add: 3 } });
    if (gpu.hasTimestampQuery) {
      const timings = await ctx.profiler.readTimings();
      expect(timings.map((t) => t.label)).toEqual(['adds']);
      expect(timings[0].ns).toBeGreaterThanOrEqual(0);
    }
    ctx.profiler.reset();
    expect(ctx.profiler.counts()).toEqual({ dispatches: 0, submissions: 0, byLabel: {} });
    ctx.profiler.destroy();
    gpu.device.destroy();
  });

  it('times each kernel in a pass of its own while kernel timing is on, with the same results', async () => {
    const gpu = await acquireGpu(await nodeGpu());
    const ctx = createKernelContext(gpu);
    const add = new AddInto(ctx);
    const out = upload(ctx, new Float32Array(4096));
    const inp = upload(
      ctx,
      Float32Array.from({ length: 4096 }, (_, i) => i),
    );
    expect(ctx.profiler.startKernelTiming()).toBe(gpu.hasTimestampQuery);
    await runCalls(ctx, [...add.encode({ out, inp, n: 4096 }), ...add.encode({ out, inp, n: 100 })], 'adds');
    const timings = await ctx.profiler.stopKernelTiming();
    // Every element got inp once, the first 100 twice: passes keep the calls' order.
    const got = await read(ctx, out, 4096);
    expect(Array.from(got.subarray(98, 102))).toEqual([196, 198, 100, 101]);
    if (gpu.hasTimestampQuery) {
      expect(timings.map((t) => t.label)).toEqual(['add', 'add', 'adds.rest']);
      expect(timings.every((t) => t.ns >= 0)).toBe(true);
    }
    // Off again: the next calls share one pass.
    expect(ctx.profiler.timingKernels).toBe(false);
    ctx.profiler.destroy();
    gpu.device.destroy();
  });

  it('builds every dense kernel family for a context', async () => {
    const gpu = await acquireGpu(await nodeGpu());
    const k = createDenseKernels(createKernelContext(gpu));
    expect(Object.keys(k).sort()).toEqual([
      'add',
      'decodeFinalize',
      'decodeLora',
      'decodeMlp',
      'decodeOProj',
      'decodeQkv',
      'embedding',
      'gemm',
      'gemv',
      'lmHead',
      'rmsnorm',
      'swiglu',
    ]);
    gpu.device.destroy();
  });
});
