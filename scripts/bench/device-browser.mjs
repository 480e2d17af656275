// The "In the browser" row of issue 22 on a lent GPU machine (device-run.mjs): whether a headless
// Chromium there reaches the GPU through WebGPU on Vulkan. The pack carries no browser (Chromium is
// far over the device tool's 64 MiB), so this looks for one the machine has; without one it says so
// in one line. With one, it asks a blank page for a WebGPU adapter (`--dump-dom` prints what the
// page wrote) and returns the adapter's vendor and architecture, or why there is none. Running
// Hearth's decode through the Service Worker there would need the built app and Playwright, which
// the pack does not hold; the adapter answer is what decides whether that run is possible.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const NAMES = ['chromium', 'chromium-browser', 'google-chrome', 'google-chrome-stable', 'chrome'];

/** The first Chromium on PATH or in Playwright's download folder, or null. */
function findChromium(env) {
  for (const dir of (env.PATH ?? '').split(':').filter(Boolean))
    for (const name of NAMES) if (existsSync(path.join(dir, name))) return path.join(dir, name);
  const playwright = path.join(env.HOME ?? '/root', '.cache/ms-playwright');
  const found = spawnSync('sh', ['-c', `ls -d ${playwright}/chromium*/chrome-linux*/chrome 2>/dev/null | head -1`], { encoding: 'utf8' });
  return found.stdout.trim() || null;
}

const PAGE = `<body><script>
(async () => {
  const say = (t) => (document.body.textContent = 'WEBGPU:' + t);
  if (!navigator.gpu) return say('no navigator.gpu');
  const a = await navigator.gpu.requestAdapter();
  if (!a) return say('no adapter');
  const i = a.info || {};
  say([i.vendor, i.architecture, i.device, i.description].filter(Boolean).join(' / ') || 'an adapter without info');
})().catch((e) => (document.body.textContent = 'WEBGPU:error ' + e.message));
</script></body>`;

/** One line: the adapter headless Chromium gets on this machine, or why there is none. */
export async function browserProbe({ env, timeoutMs }) {
  const chromium = findChromium(env);
  if (!chromium)
    return `not measured: no Chromium on this machine (looked for ${NAMES.join(', ')} on PATH and in ~/.cache/ms-playwright), and the pack cannot carry one`;
  const args = [
    '--headless=new',
    '--no-sandbox',
    '--enable-unsafe-webgpu',
    // A GPU that Chromium's blocklist names would otherwise leave WebGPU without an adapter.
    '--ignore-gpu-blocklist',
    '--virtual-time-budget=10000',
    '--dump-dom',
  ];
  // A file: page, since WebGPU is offered to secure contexts only (a data: URL is not one).
  const dir = mkdtempSync(path.join(tmpdir(), 'hearth-webgpu-probe-'));
  writeFileSync(path.join(dir, 'probe.html'), PAGE);
  const r = spawnSync(chromium, [...args, `file://${dir}/probe.html`], { env, encoding: 'utf8', timeout: timeoutMs });
  rmSync(dir, { recursive: true, force: true });
  const answer = /WEBGPU:([^<]*)/.exec(r.stdout ?? '')?.[1];
  if (answer) return `${chromium} headless: WebGPU adapter ${answer}`;
  const why = r.error?.message ?? (r.stderr ?? '').trim().split('\n').slice(-2).join(' / ');
  return `${chromium} headless gave no WebGPU answer: ${why || `exit code ${r.status}`}`;
}
