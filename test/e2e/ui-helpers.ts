/**
 * Helpers shared by the UI e2e files (ui-*.test.ts): going to a view through the navigation as
 * a person would, accepting a confirmation dialog while keeping its text, and the screenshots
 * of every view kept in docs/screenshots (written only when HEARTH_SCREENSHOTS=1, in the light
 * and dark colour schemes, so ordinary test runs leave the repository alone).
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';

const SHOTS = fileURLToPath(new URL('../../docs/screenshots/', import.meta.url));

export async function goTo(page: Page, title: string): Promise<void> {
  await page.locator('hearth-app nav').getByRole('link', { name: title, exact: true }).click();
}

/** Accepts the next confirm() and resolves with its message. */
export function acceptNextDialog(page: Page): Promise<string> {
  return new Promise((resolve) => {
    page.once('dialog', (d) => {
      resolve(d.message());
      void d.accept();
    });
  });
}

export const screenshotsOn = process.env.HEARTH_SCREENSHOTS === '1';

/** docs/screenshots/<name>-light.png and -dark.png of the whole page (only with HEARTH_SCREENSHOTS=1). */
export async function screenshot(page: Page, name: string, opts: { dark?: boolean; width?: number } = {}): Promise<void> {
  if (!screenshotsOn) return;
  mkdirSync(SHOTS, { recursive: true });
  const size = page.viewportSize();
  if (opts.width) await page.setViewportSize({ width: opts.width, height: 800 });
  for (const scheme of opts.dark === false ? (['light'] as const) : (['light', 'dark'] as const)) {
    await page.emulateMedia({ colorScheme: scheme });
    await page.waitForTimeout(300);
    await page.screenshot({ path: join(SHOTS, `${name}-${scheme}.png`), fullPage: true });
  }
  await page.emulateMedia({ colorScheme: 'light' });
  if (opts.width && size) await page.setViewportSize(size);
}
