/**
 * The GPU object in Node: Dawn through the `webgpu` npm package, for GPU tests, benchmarks and
 * scripts. Never imported by browser code (the browser has navigator.gpu).
 *
 * On Linux Dawn needs a Vulkan loader (`libvulkan.so.1`) and a Vulkan driver (an ICD). The
 * machine's own are used when it has them; otherwise the copies Debian's chromium package ships in
 * /usr/lib/chromium: its loader, and SwiftShader's ICD when there is no hardware GPU. So the GPU
 * tests need nothing beyond Node and `chromium` (README "Prerequisites", scripts/prerequisites.mjs
 * checks the same up front). HEARTH_GPU=swiftshader forces SwiftShader, HEARTH_GPU=hardware
 * forbids it.
 *
 * Not here: the device and its limits (device.ts).
 */
import { existsSync } from 'node:fs';

const CHROMIUM_LIB = '/usr/lib/chromium';
const SWIFTSHADER_ICD = `${CHROMIUM_LIB}/vk_swiftshader_icd.json`;
const CHROMIUM_VULKAN_LOADER = `${CHROMIUM_LIB}/libvulkan.so.1`;
/** The soname Dawn dlopen()s (dawn/native/vulkan/BackendVk.cpp). */
const VULKAN_LOADER = 'libvulkan.so.1';
/** glibc's dlopen flags; RTLD_NODELETE (not in os.constants.dlopen) keeps the library loaded. */
const RTLD_NOW = 2;
const RTLD_NODELETE = 0x1000;

let cached: GPU | undefined;

/** A hardware GPU needs both a device node and a vendor ICD; Mesa's lavapipe is too old for Dawn. */
function hasHardwareGpu(): boolean {
  if (process.env.VK_ICD_FILENAMES || process.env.VK_DRIVER_FILES) return true;
  const devices = ['/dev/nvidia0', '/dev/dri/renderD128'];
  return devices.some((d) => existsSync(d));
}

/**
 * Loads a shared library (a file path, or a soname searched the way Dawn's own dlopen searches)
 * into the process for good; false when it is not there. Node loads it, then refuses it as an
 * addon ("did not self-register"), and RTLD_NODELETE keeps it mapped. glibc then answers Dawn's
 * later dlopen("libvulkan.so.1") with this already-loaded library, matched by its soname.
 *
 * Why this rather than LD_LIBRARY_PATH=/usr/lib/chromium: glibc reads LD_LIBRARY_PATH only when a
 * process starts, so every process that loads Dawn (Vitest's workers, the bench, the demo and
 * training scripts, a bare `npx tsx`) would need a launcher or a config that sets it before it
 * forks. Choosing here covers every entry point at the one place that already picks the driver,
 * and leaks nothing into the environment of child processes (Chromium in e2e tests).
 */
function keepLoaded(library: string): boolean {
  try {
    process.dlopen({ exports: {} }, library, RTLD_NOW | RTLD_NODELETE);
    return true;
  } catch (e) {
    return /did not self-register/.test((e as Error).message);
  }
}

/** Picks the Vulkan driver and loader before Dawn starts (see the file header). */
function chooseVulkan(mode: string): void {
  if (mode === 'swiftshader' || (mode === 'auto' && !hasHardwareGpu())) {
    if (!existsSync(SWIFTSHADER_ICD)) {
      throw new Error(`No Vulkan driver: install Debian's chromium package (it ships ${SWIFTSHADER_ICD}) or a GPU driver.`);
    }
    process.env.VK_ICD_FILENAMES = SWIFTSHADER_ICD;
  }
  // The machine's loader first: with a GPU driver installed, that is the hardware path.
  if (keepLoaded(VULKAN_LOADER)) return;
  if (!existsSync(CHROMIUM_VULKAN_LOADER) || !keepLoaded(CHROMIUM_VULKAN_LOADER)) {
    throw new Error(
      `No Vulkan loader (${VULKAN_LOADER}): install Debian's chromium package (it ships ${CHROMIUM_VULKAN_LOADER}) or libvulkan1.`,
    );
  }
}

export interface NodeGpuOptions {
  /**
   * Dawn toggles to enable on every device, e.g. `skip_validation` and `disable_robustness`
   * (dawn/native/Toggles.cpp; the webgpu package's `enable-dawn-features` flag). Node only: a
   * browser offers no such switch, so figures taken with them are not the browser's (issue 22).
   */
  dawnToggles?: string[];
}

let cachedToggles = '';

/**
 * Returns the process-wide GPU object; the Vulkan driver is chosen before Dawn starts. Dawn reads
 * its flags once, when the GPU object is made, so a second call with other toggles is refused.
 */
export async function nodeGpu(options: NodeGpuOptions = {}): Promise<GPU> {
  const toggles = (options.dawnToggles ?? []).join(',');
  if (cached) {
    if (toggles !== cachedToggles)
      throw new Error(`nodeGpu: the GPU object was made with Dawn toggles [${cachedToggles}], not [${toggles}]`);
    return cached;
  }
  if (!/^[a-z0-9_,]*$/.test(toggles)) throw new Error(`nodeGpu: Dawn toggles are snake_case names separated by commas, not ${toggles}`);
  if (process.platform === 'linux') chooseVulkan(process.env.HEARTH_GPU ?? 'auto');
  const webgpu = await import('webgpu');
  Object.assign(globalThis, webgpu.globals);
  cached = webgpu.create(toggles ? [`enable-dawn-features=${toggles}`] : []);
  cachedToggles = toggles;
  return cached;
}
