import { describe, expect, it } from 'vitest';
import { acquireGpu } from '../../src/engine/gpu/device';
import { nodeGpu } from '../../src/engine/gpu/node-gpu';

describe('acquireGpu', () => {
  it('gets a device with the adapter limits raised', async () => {
    const ctx = await acquireGpu(await nodeGpu());
    expect(ctx.description.limits.maxStorageBufferBindingSize).toBeGreaterThanOrEqual(128 * 1024 * 1024);
    expect(ctx.description.features).toEqual([...ctx.device.features].sort());
    ctx.device.destroy();
  });
  it('refuses clearly when WebGPU is missing', async () => {
    await expect(acquireGpu(undefined)).rejects.toThrow(/WebGPU is not available/);
  });
});
