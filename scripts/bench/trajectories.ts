/**
 * The trajectories section of `npm run bench`: how long a trajectory page and the run history
 * take to read as a model's logged trajectories grow (issue 10: the figures should stay flat,
 * since a page reads only what it returns). Per size (100, 1,000 and 10,000 trajectories, logged
 * as /log calls of 5 groups x 4 trajectories, alternating train and val splits over 10 steps):
 *   - the first page, a page from a cursor in the middle, and a page filtered by split and step
 *     (20 groups each, the API's default limit), through the store's paging;
 *   - the run history (one record per /log call: this one does grow with the calls, as it must).
 *
 * Runs in Node on fake-indexeddb (the real schema, upgrade ladder and repositories; IndexedDB's
 * own costs in a browser differ, the shape of the curve is what this shows). No GPU.
 * Not here: the paging itself (src/store/trajectory-logs.ts).
 */
import 'fake-indexeddb/auto';
import type { HearthDb } from '../../src/store/schema';
import { openHearthDb } from '../../src/store/open-db';
import { pageTrajectoryGroups, recordTrajectoryLog, runHistory } from '../../src/store/trajectory-logs';

export const TRAJECTORY_BENCH_SIZES = [100, 1_000, 10_000];
const GROUPS_PER_LOG = 5;
const TRAJECTORIES_PER_GROUP = 4;
const PAGE = 20;
const REPEATS = 20;

export interface TrajectoryBenchResult {
  trajectories: number;
  logs: number;
  firstPageMs: number;
  middlePageMs: number;
  filteredPageMs: number;
  historyMs: number;
  historyEntries: number;
}

function trajectory(i: number) {
  return {
    messages_and_choices: [
      { role: 'user', content: `What is ${i % 10} + ${i % 7}?` },
      { finish_reason: 'stop', index: 0, message: { role: 'assistant', content: `${(i % 10) + (i % 7)}` }, logprobs: null },
    ],
    reward: i % 2,
    metrics: { correct: i % 2 },
    metadata: {},
    logs: [],
  };
}

/** Median milliseconds of `REPEATS` runs of `fn`. */
async function median(fn: () => Promise<unknown>): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < REPEATS; i++) {
    const t0 = performance.now();
    await fn();
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)];
}

async function seed(db: HearthDb, trajectories: number): Promise<number> {
  // The records /log needs: a model and its run (fields the repositories read).
  await db.put('models', {
    id: 'm',
    principalId: 'p',
    entity: 'e',
    project: 'bench',
    name: 'm',
    baseModel: 'hearth/tiny-chat',
    runId: 'r',
    lora: { r: 8, alpha: 16, targetModules: [] },
    createdAt: 0,
  });
  await db.put('runs', { id: 'r', modelId: 'm', principalId: 'p', createdAt: 0 });
  const perLog = GROUPS_PER_LOG * TRAJECTORIES_PER_GROUP;
  const logs = Math.ceil(trajectories / perLog);
  for (let l = 0; l < logs; l++) {
    const groups = Array.from({ length: GROUPS_PER_LOG }, (_, g) => ({
      trajectories: Array.from({ length: TRAJECTORIES_PER_GROUP }, (_, t) => trajectory(l * perLog + g * TRAJECTORIES_PER_GROUP + t)),
    }));
    const split = l % 2 ? 'val' : 'train';
    await recordTrajectoryLog(
      db,
      { id: `log${l}`, modelId: 'm', principalId: 'p', split, metrics: {}, createdAt: l, groups },
      { [`${split}/reward`]: 0.5 },
      'r',
    );
    // Ten checkpoints' worth of steps, so a split+step filter selects a tenth of a split.
    if ((l + 1) % Math.max(1, Math.floor(logs / 10)) === 0) {
      const step = (await db.count('checkpoints')) + 1;
      await db.put('checkpoints', { id: `c${step}`, modelId: 'm', principalId: 'p', step, metrics: {}, files: [], createdAt: l });
    }
  }
  return logs;
}

export async function runTrajectoryBench(log: (line: string) => void, sizes = TRAJECTORY_BENCH_SIZES): Promise<TrajectoryBenchResult[]> {
  const out: TrajectoryBenchResult[] = [];
  for (const n of sizes) {
    const db = await openHearthDb(`bench-trajectories-${n}-${Date.now()}`);
    try {
      const logs = await seed(db, n);
      const groups = logs * GROUPS_PER_LOG;
      const middle = `log${Math.floor(logs / 2)}:0`;
      const step = Math.max(1, Math.floor((await db.count('checkpoints')) / 2));
      const result: TrajectoryBenchResult = {
        trajectories: logs * GROUPS_PER_LOG * TRAJECTORIES_PER_GROUP,
        logs,
        firstPageMs: await median(() => pageTrajectoryGroups(db, 'm', { limit: PAGE })),
        middlePageMs: await median(() => pageTrajectoryGroups(db, 'm', { limit: PAGE, after: middle })),
        filteredPageMs: await median(() => pageTrajectoryGroups(db, 'm', { limit: PAGE, split: 'val', step })),
        historyMs: await median(() => runHistory(db, 'r')),
        historyEntries: (await runHistory(db, 'r')).length,
      };
      log(`bench: trajectories ${result.trajectories} (${groups} groups): first page ${result.firstPageMs.toFixed(2)} ms`);
      out.push(result);
    } finally {
      db.close();
    }
  }
  return out;
}

export function trajectoryTable(results: TrajectoryBenchResult[]): string {
  const head = [
    'trajectories',
    '/log calls',
    `first page ms (${PAGE} groups)`,
    'page after a middle cursor ms',
    'page by split + step ms',
    'run history ms (entries)',
  ];
  const rows = results.map((r) => [
    `${r.trajectories}`,
    `${r.logs}`,
    r.firstPageMs.toFixed(2),
    r.middlePageMs.toFixed(2),
    r.filteredPageMs.toFixed(2),
    `${r.historyMs.toFixed(2)} (${r.historyEntries})`,
  ]);
  return [`| ${head.join(' | ')} |`, `|${head.map(() => '---').join('|')}|`, ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');
}
