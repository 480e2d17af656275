/**
 * `npm run bench -- --chromium`: the bench sections run in a headless Chromium page (WebGPU with
 * --enable-unsafe-webgpu; SwiftShader without a GPU), served by a Vite dev server from the
 * repository (scripts/bench/page/, the bundled models from public/), driven by Playwright.
 *
 * Node only. Not here: the measurements (generation.ts, train.ts run inside the page).
 */
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { createServer } from 'vite';
import type { PageBenchOptions } from './page/browser-entry';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CHROMIUM = process.env.HEARTH_CHROMIUM ?? '/usr/bin/chromium';
const FLAGS = ['--enable-unsafe-webgpu', '--no-sandbox', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

export async function runInChromium(options: PageBenchOptions, log: (line: string) => void) {
  const server = await createServer({
    root: ROOT,
    configFile: false,
    logLevel: 'error',
    server: { host: '127.0.0.1', port: 0, strictPort: false },
  });
  await server.listen();
  const base = server.resolvedUrls?.local[0];
  if (!base) throw new Error('bench: the Vite server has no local URL');
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: FLAGS, headless: true });
  try {
    const page = await browser.newPage();
    page.on('console', (m) => log(`[chromium] ${m.text()}`));
    page.on('pageerror', (e) => log(`[chromium] page error: ${e.message}`));
    await page.goto(`${base}scripts/bench/page/index.html`);
    await page.waitForFunction(() => 'hearthBench' in window, null, { timeout: 120_000 });
    return await page.evaluate((o) => (window as any).hearthBench(o), options);
  } finally {
    await browser.close();
    await server.close();
  }
}
