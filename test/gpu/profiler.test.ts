import { afterAll, describe, expect, it } from 'vitest';
import { createKernelContext } from '../../src/engine/gpu/context';
import { acquireGpu } from '../../src/engine/gpu/device';
import { runCalls } from '../../src/engine/gpu/kernel-call';
import { nodeGpu } from '../../src/engine/gpu/node-gpu';
import { AddInto } from '../../src/engine/kernels/add';
import { createDenseKernels } from '../../src/engine/kernels/registry';
import { destroyContexts, upload } from './dense-helpers';

afterAll(destroyContexts);

describe('profiler', () => {
  it('counts dispatches per kernel label and submissions, and times passes with timestamp queries', async () => {
    const gpu = await acquireGpu(await nodeGpu());
    const ctx = createKernelContext(gpu, { timestamps: true });
    const add = new AddInto(ctx);
    const out = upload(ctx, new Float32Array(4096));
    const inp = upload(ctx, new Float32Array(4096).fill(1));
    await runCalls(ctx, [add.encode(out, inp, 4096), add.encode(out, inp, 4096), add.encode(out, inp, 100)], 'adds');
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

  it('builds every dense kernel family for a context', async () => {
    const gpu = await acquireGpu(await nodeGpu());
    const k = createDenseKernels(createKernelContext(gpu));
    expect(Object.keys(k).sort()).toEqual([
      'add',
      'decodeFinalize',
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
