/**
 * KernelContext: what every kernel wrapper needs from the GPU side, bundled once per engine: the
 * device, the pipeline cache, the profiler, and the facts that choose kernel variants (subgroups and
 * their sizes, workgroup memory, binding limits).
 *
 * Not here: acquiring the device (device.ts), kernels themselves (../kernels).
 */
import type { GpuContext } from './device';
import { PipelineCache } from './pipelines';
import { Profiler } from './profiler';

export interface KernelContext {
  device: GPUDevice;
  pipelines: PipelineCache;
  profiler: Profiler;
  /** Subgroup operations may be used (the device has the feature and it was not disabled). */
  subgroups: boolean;
  /** Subgroup size bounds from GPUAdapterInfo (4 and 128 when unknown: never assume 32). */
  subgroupMinSize: number;
  subgroupMaxSize: number;
  maxWorkgroupStorage: number;
  maxStorageBindingSize: number;
  maxBufferSize: number;
  maxWorkgroupsPerDimension: number;
  maxStorageBuffersPerStage: number;
  /**
   * A software rasteriser (SwiftShader, lavapipe): a correctness target. Kernels whose pipelines
   * take long to compile there (large unrolled tiles) pick smaller tiles on it.
   */
  softwareAdapter: boolean;
  /**
   * Invocations per workgroup of the GEMV core and the fused decode kernels (gemv-config.ts);
   * default 256. The generation engine uses 64 on software adapters, where a decode step runs
   * several times faster with small workgroups (docs/performance.md).
   */
  gemvWorkgroupSize?: number;
  /** Eight-element loads per weight row a GEMV invocation issues at once (gemv-config.ts); default 4, 1 on software adapters. */
  gemvLoads?: number;
  /** The GEMM's tile (gemm.ts): 'small' (64 x 64, the default) or 'large' (128 x 128). */
  gemmTile?: GemmTileName;
}

export type GemmTileName = 'small' | 'large';

export interface KernelContextOptions {
  /** Time compute passes with timestamp queries (when the device supports them). */
  timestamps?: boolean;
  /** See KernelContext.gemvWorkgroupSize. */
  gemvWorkgroupSize?: number;
  /** See KernelContext.gemvLoads. */
  gemvLoads?: number;
  /** See KernelContext.gemmTile. */
  gemmTile?: GemmTileName;
}

export function createKernelContext(gpu: GpuContext, opts: KernelContextOptions = {}): KernelContext {
  const limits = gpu.description.limits;
  return {
    device: gpu.device,
    pipelines: new PipelineCache(gpu.device),
    profiler: new Profiler(gpu.device, { timestamps: opts.timestamps }),
    subgroups: gpu.hasSubgroups,
    subgroupMinSize: gpu.subgroupMinSize,
    subgroupMaxSize: gpu.subgroupMaxSize,
    maxWorkgroupStorage: limits.maxComputeWorkgroupStorageSize,
    maxStorageBindingSize: limits.maxStorageBufferBindingSize,
    maxBufferSize: limits.maxBufferSize,
    maxWorkgroupsPerDimension: limits.maxComputeWorkgroupsPerDimension,
    maxStorageBuffersPerStage: limits.maxStorageBuffersPerShaderStage,
    softwareAdapter: gpu.description.adapter.isSoftware,
    gemvWorkgroupSize: opts.gemvWorkgroupSize,
    gemvLoads: opts.gemvLoads,
    gemmTile: opts.gemmTile,
  };
}
