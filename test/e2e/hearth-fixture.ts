// The per-file fixture of e2e tests that call Hearth with the openai SDK: one Hearth (server,
// browser, profile, app tab, admin key) with the SDK loaded, started before the file's tests and
// closed after them. Kept apart from harness.ts, which scripts/bench/e2e.ts imports outside vitest.
import { afterAll, beforeAll } from 'vitest';
import { loadOpenAI, startHearth, type Hearth } from './harness';

/** Read `.current` inside a test (it is set before the first one runs). */
export function hearthWithOpenAI(): { current: Hearth } {
  const ref = {} as { current: Hearth };
  beforeAll(async () => {
    ref.current = await startHearth();
    await loadOpenAI(ref.current.page);
  }, 120_000);
  afterAll(async () => {
    await ref.current?.close();
  });
  return ref;
}
