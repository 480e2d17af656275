// test/reporters/skip-summary.ts: a real Vitest run of a fixture with every kind of skip; the
// reporter lists each skipped test under its reason.
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createVitest } from 'vitest/node';
import SkipSummary from '../../reporters/skip-summary';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));

describe('SkipSummary', () => {
  it('lists every skipped test with its reason, grouped, and the count', async () => {
    let printed = '';
    const vitest = await createVitest('test', {
      config: false,
      root: ROOT,
      include: ['test/unit/setup/fixtures/skips.fixture.ts'],
      reporters: [new SkipSummary((text: string) => (printed += text))],
      watch: false,
    });
    try {
      await vitest.start();
    } finally {
      await vitest.close();
    }
    const lines = printed.trim().split('\n');
    expect(lines[0]).toBe('4 skipped tests:');
    expect(lines).toContain('  2 because a hook of its suite failed: WebGPU is present but no adapter');
    expect(lines).toContain('    unit/setup/fixtures/skips.fixture.ts > needs a GPU > first');
    expect(lines).toContain('  1 because `.skip` in the source, or left out by -t or .only');
    expect(lines).toContain('  1 because no Chromium at /nonexistent');
    expect(printed).not.toContain('> runs');
  });
});
