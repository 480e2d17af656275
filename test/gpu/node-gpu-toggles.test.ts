// nodeGpu's Dawn toggles (the bench's --dawn-toggles, issue 22): they reach the device Dawn makes
// (with skip_validation, a buffer usage Dawn refuses otherwise raises no validation error), they are
// fixed for the process once the GPU object exists, and a malformed list is refused before Dawn starts.
import { describe, expect, it } from 'vitest';
import { acquireGpu } from '../../src/engine/gpu/device';
import { nodeGpu } from '../../src/engine/gpu/node-gpu';

describe('nodeGpu Dawn toggles', () => {
  it('refuses a malformed toggle list before making the GPU object', async () => {
    await expect(nodeGpu({ dawnToggles: ['skip_validation disable_robustness'] })).rejects.toThrow(/snake_case names separated by commas/);
  });

  it('applies skip_validation to the device, and keeps the toggles for the process', async () => {
    const ctx = await acquireGpu(await nodeGpu({ dawnToggles: ['skip_validation', 'disable_robustness'] }));
    ctx.device.pushErrorScope('validation');
    // MAP_READ with STORAGE: Dawn's validation refuses this usage (only COPY_DST may join MAP_READ).
    ctx.device.createBuffer({ size: 16, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.STORAGE });
    expect(await ctx.device.popErrorScope()).toBeNull();
    ctx.device.destroy();
    await expect(nodeGpu()).rejects.toThrow(
      'nodeGpu: the GPU object was made with Dawn toggles [skip_validation,disable_robustness], not []',
    );
  });
});
