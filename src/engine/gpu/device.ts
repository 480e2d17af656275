/**
 * GPU device acquisition: one GPUDevice per engine, with the adapter's real limits and the
 * optional features Hearth can use. Works on `navigator.gpu` in Chrome and on the `webgpu`
 * package (Dawn) in Node; the caller passes the GPU object, so this file never touches globals.
 *
 * Not here: buffers, pipelines, kernels (see buffers.ts, pipelines.ts, ../kernels).
 * Reference: gpuweb spec §Limits; docs/reference/wgsl-engine.md §6.
 */

/** Optional features Hearth turns on when the adapter has them. `shader-f16` is only a fast path. */
const WANTED_FEATURES: GPUFeatureName[] = ['subgroups', 'timestamp-query', 'shader-f16'];

/** Limits Hearth raises to the adapter's maximum (the defaults are far below real GPUs). */
const WANTED_LIMITS = [
  'maxBufferSize',
  'maxStorageBufferBindingSize',
  'maxStorageBuffersPerShaderStage',
  'maxComputeWorkgroupStorageSize',
  'maxComputeInvocationsPerWorkgroup',
  'maxComputeWorkgroupSizeX',
  'maxComputeWorkgroupSizeY',
  'maxComputeWorkgroupSizeZ',
  'maxComputeWorkgroupsPerDimension',
  'maxUniformBufferBindingSize',
] as const;

export type GpuLimitName = (typeof WANTED_LIMITS)[number];

export interface AdapterDescription {
  vendor: string;
  architecture: string;
  device: string;
  description: string;
  /** True for software rasterisers (SwiftShader, lavapipe): a correctness target, not a speed one. */
  isSoftware: boolean;
}

/** What the UI and /v1 status show about the engine's GPU; plain data, safe to postMessage. */
export interface GpuDescription {
  adapter: AdapterDescription;
  features: string[];
  limits: Record<GpuLimitName, number>;
}

export interface GpuContext {
  device: GPUDevice;
  description: GpuDescription;
  hasSubgroups: boolean;
  hasF16: boolean;
  hasTimestampQuery: boolean;
  /** Min/max subgroup size when known (GPUAdapterInfo); never assume 32. */
  subgroupMinSize: number;
  subgroupMaxSize: number;
}

export class GpuUnavailableError extends Error {
  override name = 'GpuUnavailableError';
}

export interface AcquireOptions {
  powerPreference?: GPUPowerPreference;
  /** Do not request these features even when present (tests use it to cover fallback paths). */
  disableFeatures?: GPUFeatureName[];
}

export async function acquireGpu(gpu: GPU | undefined, opts: AcquireOptions = {}): Promise<GpuContext> {
  if (!gpu) {
    throw new GpuUnavailableError(
      'WebGPU is not available: use a Chromium-family browser with WebGPU enabled (Chrome 121+, or --enable-unsafe-webgpu).',
    );
  }
  const adapter = await gpu.requestAdapter({ powerPreference: opts.powerPreference ?? 'high-performance' });
  if (!adapter) throw new GpuUnavailableError('WebGPU is present but no GPU adapter was found.');
  const disabled = new Set(opts.disableFeatures ?? []);
  const requiredFeatures = WANTED_FEATURES.filter((f) => adapter.features.has(f) && !disabled.has(f));
  const requiredLimits: Record<string, number> = {};
  for (const name of WANTED_LIMITS) requiredLimits[name] = adapter.limits[name];
  const device = await adapter.requestDevice({ requiredFeatures, requiredLimits });
  const info = adapter.info;
  const description: GpuDescription = {
    adapter: {
      vendor: info?.vendor ?? '',
      architecture: info?.architecture ?? '',
      device: info?.device ?? '',
      description: info?.description ?? '',
      isSoftware: /swiftshader|llvmpipe|lavapipe|software/i.test(
        `${info?.vendor} ${info?.architecture} ${info?.device} ${info?.description}`,
      ),
    },
    features: [...device.features].sort(),
    limits: Object.fromEntries(WANTED_LIMITS.map((n) => [n, device.limits[n]])) as Record<GpuLimitName, number>,
  };
  const anyInfo = info as unknown as { subgroupMinSize?: number; subgroupMaxSize?: number };
  return {
    device,
    description,
    hasSubgroups: device.features.has('subgroups'),
    hasF16: device.features.has('shader-f16'),
    hasTimestampQuery: device.features.has('timestamp-query'),
    subgroupMinSize: anyInfo.subgroupMinSize ?? 4,
    subgroupMaxSize: anyInfo.subgroupMaxSize ?? 128,
  };
}
