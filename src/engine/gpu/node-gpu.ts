/**
 * The GPU object in Node: Dawn through the `webgpu` npm package, for GPU tests, benchmarks and
 * scripts. Never imported by browser code (the browser has navigator.gpu).
 *
 * With no hardware Vulkan driver, Dawn runs on SwiftShader's Vulkan ICD, which Debian's chromium
 * package ships; HEARTH_GPU=swiftshader forces it, HEARTH_GPU=hardware forbids it.
 */
import { existsSync } from 'node:fs';

const SWIFTSHADER_ICD = '/usr/lib/chromium/vk_swiftshader_icd.json';

let cached: GPU | undefined;

/** A hardware GPU needs both a device node and a vendor ICD; Mesa's lavapipe is too old for Dawn. */
function hasHardwareGpu(): boolean {
  if (process.env.VK_ICD_FILENAMES || process.env.VK_DRIVER_FILES) return true;
  const devices = ['/dev/nvidia0', '/dev/dri/renderD128'];
  return devices.some((d) => existsSync(d));
}

/** Returns the process-wide GPU object; the Vulkan driver is chosen before Dawn starts. */
export async function nodeGpu(): Promise<GPU> {
  if (cached) return cached;
  const mode = process.env.HEARTH_GPU ?? 'auto';
  if (mode === 'swiftshader' || (mode === 'auto' && !hasHardwareGpu())) {
    if (!existsSync(SWIFTSHADER_ICD)) {
      throw new Error(`No Vulkan driver: install Debian's chromium package (it ships ${SWIFTSHADER_ICD}) or a GPU driver.`);
    }
    process.env.VK_ICD_FILENAMES = SWIFTSHADER_ICD;
  }
  const webgpu = await import('webgpu');
  Object.assign(globalThis, webgpu.globals);
  cached = webgpu.create([]) as unknown as GPU;
  return cached;
}
