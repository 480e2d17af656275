// scripts/prerequisites.mjs, the check `npm test`, `npm start` and `npm run bench` run first:
// on made-up machines it names exactly the missing piece, and the real script stops with one
// message and a non-zero exit.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { missingPrerequisites, prerequisitesMessage } from '../../../scripts/prerequisites.mjs';

const ROOT = '/repo';
const BINS = ['tsc', 'vite', 'vitest', 'tsx'].map((b) => join(ROOT, 'node_modules', '.bin', b));
const CHROMIUM_FILES = ['/usr/bin/chromium', '/usr/lib/chromium/libvulkan.so.1', '/usr/lib/chromium/vk_swiftshader_icd.json'];

/** A Linux machine with Node 20.20, `npm ci` done and Debian's chromium, minus what a test removes. */
function machine(
  over: { nodeVersion?: string; files?: string[]; without?: string[]; env?: Record<string, string>; systemLoader?: boolean } = {},
) {
  const files = new Set(over.files ?? [...BINS, ...CHROMIUM_FILES]);
  for (const f of over.without ?? []) files.delete(f);
  return {
    nodeVersion: over.nodeVersion ?? '20.20.2',
    platform: 'linux',
    env: over.env ?? {},
    root: ROOT,
    exists: (p: string) => files.has(p),
    loads: (soname: string) => soname === 'libvulkan.so.1' && over.systemLoader === true,
  };
}

const whats = (command: string, m: ReturnType<typeof machine>) => missingPrerequisites(command, m).map((x) => x.what);

describe('missingPrerequisites', () => {
  it('finds nothing missing on a machine with Node 20.19+, the dependencies and chromium', () => {
    for (const command of ['test', 'start', 'bench', 'test:unit', 'test:gpu', 'test:e2e']) expect(whats(command, machine())).toEqual([]);
  });

  it('names a Node older than Vite 8 supports, for every command', () => {
    for (const version of ['18.20.4', '20.11.0', '21.7.3', '22.11.0']) {
      expect(whats('start', machine({ nodeVersion: version }))).toEqual([
        `Node.js ${version} is too old: Hearth needs Node 20.19+ or 22.12+.`,
      ]);
    }
    expect(whats('start', machine({ nodeVersion: '22.12.0' }))).toEqual([]);
    expect(whats('start', machine({ nodeVersion: '24.1.0' }))).toEqual([]);
  });

  it('says to run npm ci when the dependencies are not installed', () => {
    const missing = missingPrerequisites('test', machine({ without: BINS }));
    expect(missing).toHaveLength(1);
    expect(missing[0].what).toContain('tsc, vite, vitest');
    expect(missing[0].install).toBe('Run: npm ci');
  });

  it('names the Chromium binary, honouring HEARTH_CHROMIUM, for test and bench but not start', () => {
    const noBrowser = machine({ without: ['/usr/bin/chromium'] });
    expect(whats('test', noBrowser)).toEqual([
      'No Chromium at /usr/bin/chromium (the end-to-end tests and the browser bench drive it headless).',
    ]);
    expect(whats('bench', noBrowser)).toHaveLength(1);
    expect(whats('start', noBrowser)).toEqual([]);
    expect(whats('test:gpu', noBrowser)).toEqual([]);
    expect(whats('test', machine({ env: { HEARTH_CHROMIUM: '/opt/chrome/chrome' } }))[0]).toContain('/opt/chrome/chrome');
  });

  it("wants a Vulkan loader, the system's or chromium's copy", () => {
    const noLoader = machine({ without: ['/usr/lib/chromium/libvulkan.so.1'] });
    const missing = missingPrerequisites('test:gpu', noLoader);
    expect(missing.map((m) => m.what)).toEqual([
      'No Vulkan loader (libvulkan.so.1) for WebGPU in Node: none on the system, none in /usr/lib/chromium.',
    ]);
    expect(missing[0].install).toContain('apt-get install --no-install-recommends chromium');
    expect(whats('test:gpu', machine({ without: ['/usr/lib/chromium/libvulkan.so.1'], systemLoader: true }))).toEqual([]);
  });

  it('wants SwiftShader only without a GPU, and a GPU when HEARTH_GPU=hardware', () => {
    const noIcd = ['/usr/lib/chromium/vk_swiftshader_icd.json'];
    expect(whats('bench', machine({ without: noIcd }))).toEqual([
      'No Vulkan driver for WebGPU in Node: no GPU, and no SwiftShader driver at /usr/lib/chromium/vk_swiftshader_icd.json.',
    ]);
    const gpuBox = machine({ files: [...BINS, '/usr/bin/chromium', '/dev/nvidia0'], systemLoader: true });
    expect(whats('test', gpuBox)).toEqual([]);
    expect(whats('test', machine({ env: { HEARTH_GPU: 'hardware' } }))[0]).toMatch(/^HEARTH_GPU=hardware, but there is no GPU device/);
    expect(whats('test', machine({ without: noIcd, env: { VK_ICD_FILENAMES: '/etc/vulkan/icd.d/nvidia_icd.json' } }))).toEqual([]);
  });

  it('does not ask for Vulkan off Linux (Dawn uses Metal or D3D there)', () => {
    expect(missingPrerequisites('test:gpu', { ...machine({ files: BINS }), platform: 'darwin' })).toEqual([]);
  });

  it('puts every missing piece in one message that ends the run', () => {
    const message = prerequisitesMessage('bench', missingPrerequisites('bench', machine({ files: [] })));
    expect(message.split('\n')[0]).toBe('`npm run bench` cannot run on this machine yet. Missing:');
    expect(message).toContain('Run: npm ci');
    expect(message).toContain('No Chromium at /usr/bin/chromium');
    expect(message).toContain('No Vulkan driver');
    expect(message).toContain('No Vulkan loader');
    expect(prerequisitesMessage('test', [])).toBe('');
  });
});

describe('node scripts/prerequisites.mjs', () => {
  const run = (command: string, env: Record<string, string>) =>
    spawnSync(process.execPath, ['scripts/prerequisites.mjs', command], { env: { ...process.env, ...env }, encoding: 'utf8' });

  it('stops `npm test` with exit 1 and the message when the Chromium it is told to use is missing', () => {
    const r = run('test', { HEARTH_CHROMIUM: '/nonexistent/chromium' });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('`npm test` cannot run on this machine yet');
    expect(r.stderr).toContain('No Chromium at /nonexistent/chromium');
    expect(r.stdout).toBe('');
  });

  it('refuses an unknown command', () => {
    const r = run('deploy', {});
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain('unknown command "deploy"');
  });
});
