/**
 * One sampler step on its own: prepare, record the four passes' calls in a fresh encoder, copy the
 * results, submit, read back. For tests, benchmarks and tools; the generation core instead records
 * `Sampler.encode`'s calls into its decode-step pass and copies the output with the rest of the step.
 * Not here: the sampler itself (sampler.ts).
 */
import type { KernelContext } from '../gpu/context';
import type { SamplerStepRow } from '../sampling/sampler-row';
import type { SamplerRowOutput, Sampler } from './sampler';

export async function runSamplerStep(
  ctx: KernelContext,
  sampler: Sampler,
  logits: GPUBuffer, // f32 (B, V)
  rows: readonly SamplerStepRow[],
): Promise<SamplerRowOutput[]> {
  const device = ctx.device;
  sampler.prepare(rows);
  const bytes = sampler.outputBytes();
  const staging = device.createBuffer({ label: 'sampler.staging', size: bytes, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  const encoder = device.createCommandEncoder({ label: 'sampler.step' });
  const pass = encoder.beginComputePass({ label: 'sampler.step' });
  for (const c of sampler.encode({ logits })) c.record(pass, ctx);
  pass.end();
  sampler.copyOutput(encoder, staging);
  ctx.profiler.submit(device.queue, [encoder.finish()]);
  await staging.mapAsync(GPUMapMode.READ);
  const out = sampler.decodeOutput(staging.getMappedRange().slice(0));
  staging.unmap();
  staging.destroy();
  return out;
}
