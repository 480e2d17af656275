/**
 * A Vitest reporter that lists every skipped test with the reason it was skipped, before Vitest's
 * failure report and summary (which stay the closing lines: CI reads "N passed | N failed"). The
 * suite skips nothing on purpose (README "Commands"): a test that cannot run on this machine
 * fails saying why. A skip therefore comes from a failed `beforeAll` (its error is reported as
 * a failure), a `-t` filter, `.only`, or an explicit `.skip`/`ctx.skip(reason)` someone added,
 * and this list makes each one visible.
 *
 * Not here: the prerequisites checked before the run (scripts/prerequisites.mjs).
 */
import type { Reporter, TestCase, TestModule, TestSuite } from 'vitest/node';

/** Why a test that did not run was skipped, from the test's own note or its suite's state. */
export function skipReason(test: TestCase): string {
  const result = test.result();
  if (result.state === 'skipped' && result.note) return result.note;
  if (test.options.mode === 'skip') return '`.skip` in the source, or left out by -t or .only';
  if (test.options.mode === 'todo') return '`.todo` in the source';
  for (let parent: TestSuite | TestModule = test.parent; ; parent = parent.parent) {
    const error = parent.errors()[0];
    if (error) return `a hook of its ${parent.type === 'module' ? 'file' : 'suite'} failed: ${error.message.split('\n')[0]}`;
    if (parent.type === 'module') break;
  }
  return 'filtered out (-t, .only, or a file that did not finish)';
}

export default class SkipSummary implements Reporter {
  private readonly write: (text: string) => void;

  /** Vitest constructs a reporter named by path with its options object (`{}`), not a writer. */
  constructor(write?: unknown) {
    this.write = typeof write === 'function' ? (write as (text: string) => void) : (text) => process.stdout.write(text);
  }

  onTestRunEnd(modules: ReadonlyArray<TestModule>): void {
    const byReason = new Map<string, string[]>();
    for (const module of modules) {
      for (const test of module.children.allTests('skipped')) {
        const reason = skipReason(test);
        byReason.set(reason, [...(byReason.get(reason) ?? []), `${test.module.moduleId.split('/test/').pop()} > ${test.fullName}`]);
      }
    }
    const count = [...byReason.values()].reduce((n, tests) => n + tests.length, 0);
    if (count === 0) return;
    const lines = [`\n${count} skipped test${count === 1 ? '' : 's'}:`];
    for (const [reason, tests] of byReason) {
      lines.push(`  ${tests.length} because ${reason}`);
      for (const t of tests.slice(0, 5)) lines.push(`    ${t}`);
      if (tests.length > 5) lines.push(`    ... and ${tests.length - 5} more`);
    }
    this.write(`${lines.join('\n')}\n`);
  }
}
