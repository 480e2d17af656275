/**
 * Storage used by this origin (GET /v1/preview/storage): the browser's own estimate (usage and
 * quota from navigator.storage.estimate()) and Hearth's per-kind sums read from the stores:
 * cached model weights (the model-file cache), checkpoints (adapter files, and the adapter and
 * optimizer state of running jobs), trajectories (logged groups and RL job inputs, counted as
 * their JSON size, which is what IndexedDB's structured clone roughly keeps), and artifacts (SFT
 * data). `other` is what the browser counts beyond those (indexes, the app shell cache).
 *
 * The whole origin's storage is one person's browser: only the admin key may read it.
 * Not here: freeing space (DELETE base-models, models, checkpoints do that).
 */
import type { Principal } from './principal';
import type { ServiceContext } from './context';
import { ForbiddenError } from './errors';

export interface StorageReport {
  usage: number;
  /** null where the browser does not say (no StorageManager, e.g. Node). */
  quota: number | null;
  kinds: { weights: number; checkpoints: number; trajectories: number; artifacts: number; other: number };
}

interface StorageEstimator {
  estimate(): Promise<{ usage?: number; quota?: number }>;
}

function browserStorage(): StorageEstimator | undefined {
  return (globalThis as { navigator?: { storage?: StorageEstimator } }).navigator?.storage;
}

const encoder = new TextEncoder();
const jsonBytes = (value: unknown) => encoder.encode(JSON.stringify(value) ?? '').byteLength;
const size = (b: ArrayBuffer | null | undefined) => b?.byteLength ?? 0;

/** Sums `measure` over a store one record at a time (never loading a store of blobs at once). */
async function sumStore<S extends 'checkpointFiles' | 'jobProgress' | 'trajectoryLogs' | 'trajectoryGroups' | 'jobInputs' | 'artifacts'>(
  ctx: ServiceContext,
  store: S,
  measure: (value: never) => number,
): Promise<number> {
  let total = 0;
  let cursor = await ctx.db.transaction(store).store.openCursor();
  while (cursor) {
    total += measure(cursor.value as never);
    cursor = await cursor.continue();
  }
  return total;
}

export async function storageReport(ctx: ServiceContext, caller: Principal, estimator = browserStorage()): Promise<StorageReport> {
  if (!caller.admin) throw new ForbiddenError("Reading the browser's storage needs the admin key.");
  const weights = ctx.modelFiles ? (await ctx.modelFiles.listModels()).reduce((s, m) => s + m.bytes, 0) : 0;
  const checkpoints =
    (await sumStore(ctx, 'checkpointFiles', (f: { bytes: ArrayBuffer }) => size(f.bytes))) +
    (await sumStore(
      ctx,
      'jobProgress',
      (p: { adapter: ArrayBuffer; optimizer: ArrayBuffer; precomputed: ArrayBuffer | null }) =>
        size(p.adapter) + size(p.optimizer) + size(p.precomputed),
    ));
  const trajectories =
    // Each log's groups as one JSON array: its brackets ("[]", or "[" + "]" less a comma) and each group plus a separator.
    (await sumStore(ctx, 'trajectoryLogs', (l: { numGroups: number }) => (l.numGroups === 0 ? 2 : 1))) +
    (await sumStore(ctx, 'trajectoryGroups', (g: { group: unknown }) => jsonBytes(g.group) + 1)) +
    (await sumStore(ctx, 'jobInputs', (i: { input: unknown }) => jsonBytes(i.input)));
  const artifacts = await sumStore(ctx, 'artifacts', (a: { files: { bytes: ArrayBuffer }[] }) =>
    a.files.reduce((s, f) => s + size(f.bytes), 0),
  );
  const known = weights + checkpoints + trajectories + artifacts;
  let usage = known;
  let quota: number | null = null;
  if (estimator) {
    const estimate = await estimator.estimate();
    usage = estimate.usage ?? known;
    quota = estimate.quota ?? null;
  }
  return { usage, quota, kinds: { weights, checkpoints, trajectories, artifacts, other: Math.max(0, usage - known) } };
}
