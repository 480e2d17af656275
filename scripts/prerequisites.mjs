/**
 * `node scripts/prerequisites.mjs <command>`: the first step of `npm test`, `npm start`,
 * `npm run bench` (and the single-suite scripts). Checks that this machine has what README.md's
 * "Prerequisites" list for that command, and when something is missing stops with one message
 * that says what and how to install it, instead of a run that fails in dozens of places.
 *
 * Plain JavaScript that any Node runs without the dev dependencies, so it can report an old Node
 * or a missing `npm ci` itself. Not here: choosing the Vulkan driver at run time
 * (src/engine/gpu/node-gpu.ts, whose search this mirrors), skipped tests (test/reporters).
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const CHROMIUM_LIB = '/usr/lib/chromium';
const APT_CHROMIUM = 'sudo apt-get install --no-install-recommends chromium';
const GPU_DEVICES = ['/dev/nvidia0', '/dev/dri/renderD128'];

/** What each command needs; `test` is the union of the three suites. */
const NEEDS = {
  start: { bins: ['vite'] },
  'test:unit': { bins: ['vitest'] },
  'test:gpu': { bins: ['vitest'], vulkan: true },
  'test:e2e': { bins: ['vite', 'vitest'], chromium: true },
  test: { bins: ['tsc', 'vite', 'vitest'], chromium: true, vulkan: true },
  // The default bench runs in Node (Dawn) and its e2e section in Chromium.
  bench: { bins: ['tsx'], chromium: true, vulkan: true },
};

/** Vite 8's engines: ^20.19.0 || >=22.12.0 (older Nodes fail inside the build). */
export function nodeIsSupported(version) {
  const [major, minor] = version.replace(/^v/, '').split('.').map(Number);
  return (major === 20 && minor >= 19) || (major === 22 && minor >= 12) || major >= 23;
}

/**
 * The missing prerequisites of `command` on `machine`, each `{ what, install }`; empty when
 * nothing is missing. `machine` is { nodeVersion, platform, env, root, exists(path),
 * loads(soname) } (see thisMachine()); tests pass a made-up one.
 */
export function missingPrerequisites(command, machine) {
  const needs = NEEDS[command];
  if (!needs) throw new Error(`prerequisites: unknown command "${command}" (one of ${Object.keys(NEEDS).join(', ')})`);
  const missing = [];
  if (!nodeIsSupported(machine.nodeVersion)) {
    missing.push({
      what: `Node.js ${machine.nodeVersion} is too old: Hearth needs Node 20.19+ or 22.12+.`,
      install: 'Install a current Node LTS (https://nodejs.org, or NodeSource on Debian).',
    });
  }
  const absent = needs.bins.filter((bin) => !machine.exists(join(machine.root, 'node_modules', '.bin', bin)));
  if (absent.length > 0) {
    missing.push({
      what: `The npm dependencies are not installed (no ${absent.join(', ')} in node_modules/.bin).`,
      install: 'Run: npm ci',
    });
  }
  if (needs.chromium) missing.push(...missingChromium(machine));
  if (needs.vulkan && machine.platform === 'linux') missing.push(...missingVulkan(machine));
  return missing;
}

function missingChromium(machine) {
  const chromium = machine.env.HEARTH_CHROMIUM || '/usr/bin/chromium';
  if (machine.exists(chromium)) return [];
  return [
    {
      what: `No Chromium at ${chromium} (the end-to-end tests and the browser bench drive it headless).`,
      install: `Install it: ${APT_CHROMIUM} (Debian), or set HEARTH_CHROMIUM to a Chromium 121+ binary.`,
    },
  ];
}

/** WebGPU in Node (Dawn) on Linux: a Vulkan loader and a Vulkan driver, as node-gpu.ts finds them. */
function missingVulkan(machine) {
  const missing = [];
  const mode = machine.env.HEARTH_GPU || 'auto';
  const hardware = Boolean(machine.env.VK_ICD_FILENAMES || machine.env.VK_DRIVER_FILES) || GPU_DEVICES.some((d) => machine.exists(d));
  const swiftshader = `${CHROMIUM_LIB}/vk_swiftshader_icd.json`;
  if (mode === 'hardware' && !hardware) {
    missing.push({
      what: `HEARTH_GPU=hardware, but there is no GPU device (${GPU_DEVICES.join(', ')}) for WebGPU in Node.`,
      install: "Install the GPU's driver, or unset HEARTH_GPU to use SwiftShader.",
    });
  } else if ((mode === 'swiftshader' || !hardware) && !machine.exists(swiftshader)) {
    missing.push({
      what: `No Vulkan driver for WebGPU in Node: no GPU, and no SwiftShader driver at ${swiftshader}.`,
      install: `Install Debian's chromium package, which ships it: ${APT_CHROMIUM}`,
    });
  }
  if (!machine.loads('libvulkan.so.1') && !machine.exists(`${CHROMIUM_LIB}/libvulkan.so.1`)) {
    missing.push({
      what: `No Vulkan loader (libvulkan.so.1) for WebGPU in Node: none on the system, none in ${CHROMIUM_LIB}.`,
      install: `Install Debian's chromium package, which ships one: ${APT_CHROMIUM} (or libvulkan1).`,
    });
  }
  return missing;
}

/** Whether the dynamic linker finds `soname` the way Dawn's dlopen would (see node-gpu.ts). */
function loads(soname) {
  try {
    process.dlopen({ exports: {} }, soname);
    return true;
  } catch (e) {
    return /did not self-register/.test(e.message);
  }
}

export function thisMachine() {
  return {
    nodeVersion: process.versions.node,
    platform: process.platform,
    env: process.env,
    root: join(dirname(fileURLToPath(import.meta.url)), '..'),
    exists: existsSync,
    loads,
  };
}

/** The one message for `npm <command>`, or '' when nothing is missing. */
export function prerequisitesMessage(command, missing) {
  if (missing.length === 0) return '';
  const lines = [
    `\`npm ${command === 'start' || command === 'test' ? command : `run ${command}`}\` cannot run on this machine yet. Missing:`,
  ];
  for (const m of missing) lines.push(`  - ${m.what}`, `    ${m.install}`);
  lines.push('Nothing was run. See README.md, "Prerequisites".');
  return lines.join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const command = process.argv[2] || 'test';
  const message = prerequisitesMessage(command, missingPrerequisites(command, thisMachine()));
  if (message) {
    console.error(message);
    process.exit(1);
  }
}
