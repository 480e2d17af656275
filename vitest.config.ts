// One Vitest run covers the three suites (DESIGN.md "Tests"); `npm test` builds the app first.
//   unit: Node, no GPU, no browser.
//   gpu:  Node + Dawn (`webgpu` package); SwiftShader when the machine has no GPU.
//   e2e:  Playwright driving headless Chromium against the built app (dist/); each file has its
//         own server port, browser and profile, so two files can run at once.
// Two workers, and every project may run files in parallel (Vitest's default on a 2-core machine
// is one worker, and a project with `fileParallelism: false` joins one queue that runs a file at a
// time, so the gpu and e2e files never overlapped). A GPU or browser test waits on polling, timers
// and process start-up much of its time, so two files at once use the second core. Measured on 2
// cores: 28 min 51 s with one worker; 26 min 35 s with two but gpu and e2e one file at a time;
// 16 min 49 s with two files of any project at a time (1569 tests).
// Before Vitest's failure report and summary, test/reporters/skip-summary.ts lists each skipped
// test and why.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    maxWorkers: 2,
    // The skip list first, so that Vitest's summary stays the closing lines (CI reads them).
    reporters: ['./test/reporters/skip-summary.ts', 'default'],
    projects: [
      {
        extends: true,
        test: { name: 'unit', include: ['test/unit/**/*.test.ts'], environment: 'node' },
      },
      {
        extends: true,
        test: {
          name: 'gpu',
          include: ['test/gpu/**/*.test.ts'],
          environment: 'node',
          testTimeout: 120_000,
          hookTimeout: 120_000,
        },
      },
      {
        extends: true,
        test: {
          name: 'e2e',
          include: ['test/e2e/**/*.test.ts'],
          environment: 'node',
          testTimeout: 180_000,
          hookTimeout: 180_000,
        },
      },
    ],
  },
});
