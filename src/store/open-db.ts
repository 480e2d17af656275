/**
 * Opening Hearth's database ("hearth"): the one upgrade ladder that creates and migrates its
 * object stores (schema.ts), version by version, and stepping aside when a newer tab upgrades it.
 * Reference: idb README "Upgrading".
 *
 * Not here: the record types (schema.ts), reading and writing records (one file per kind).
 */
import { openDB, type IDBPTransaction } from 'idb';
import type { HearthDb, HearthSchema, RunHistoryEntry, RunRecord, StoreName, TrajectoryLogRecord } from './schema';

export const DB_NAME = 'hearth';
/** Bump with a new `if (oldVersion < N)` rung in `upgrade` below; never edit an old rung. */
export const DB_VERSION = 5;

/** Version 4's migration: each log's groups and each run's history into their own records. */
async function moveToV4(tx: IDBPTransaction<HearthSchema, StoreName[], 'versionchange'>): Promise<void> {
  type V3Log = TrajectoryLogRecord & { groups?: unknown[] };
  const logs = ((await tx.objectStore('trajectoryLogs').getAll()) as V3Log[]).sort((a, b) => a.createdAt - b.createdAt);
  const seqs = new Map<string, number>();
  for (const { groups = [], ...log } of logs) {
    for (const [i, group] of groups.entries()) {
      const seq = (seqs.get(log.modelId) ?? 0) + 1;
      seqs.set(log.modelId, seq);
      await tx.objectStore('trajectoryGroups').add({
        id: `${log.id}:${i}`,
        modelId: log.modelId,
        principalId: log.principalId,
        logId: log.id,
        seq,
        split: log.split,
        step: log.step,
        loggedAt: log.createdAt,
        group,
      });
    }
    await tx.objectStore('trajectoryLogs').put({ ...log, numGroups: groups.length });
  }
  type V3Run = RunRecord & { history?: RunHistoryEntry[] };
  for (const { history = [], ...run } of (await tx.objectStore('runs').getAll()) as V3Run[]) {
    for (const [i, entry] of history.entries()) await tx.objectStore('runHistory').add({ ...entry, runId: run.id, seq: i + 1 });
    await tx.objectStore('runs').put(run);
  }
}

/**
 * Opens (creating or migrating) the database. `name` is only overridden by tests.
 * A newer tab that bumps the version asks older connections to close (`blocking`), so an
 * upgrade never waits forever on a stale engine.
 */
const upgradedAway = new WeakSet<HearthDb>();

/** True once `db` closed itself so that a newer app version (another tab) could upgrade. */
export function closedForUpgrade(db: HearthDb | undefined): boolean {
  return db !== undefined && upgradedAway.has(db);
}

export async function openHearthDb(name: string = DB_NAME): Promise<HearthDb> {
  let opened: HearthDb | undefined = undefined;
  opened = await openDB<HearthSchema>(name, DB_VERSION, {
    upgrade(db, oldVersion, _newVersion, tx) {
      if (oldVersion < 1) {
        db.createObjectStore('principals', { keyPath: 'id' });
        const keys = db.createObjectStore('apiKeys', { keyPath: 'id' });
        keys.createIndex('by-hash', 'hash', { unique: true });
        keys.createIndex('by-principal', 'principalId');
        db.createObjectStore('owner', { keyPath: 'id' });
        const models = db.createObjectStore('models', { keyPath: 'id' });
        models.createIndex('by-principal', 'principalId');
        models.createIndex('by-name', ['principalId', 'entity', 'project', 'name'], { unique: true });
        const checkpoints = db.createObjectStore('checkpoints', { keyPath: 'id' });
        checkpoints.createIndex('by-model-step', ['modelId', 'step'], { unique: true });
        db.createObjectStore('checkpointFiles', { keyPath: ['checkpointId', 'name'] });
        db.createObjectStore('runs', { keyPath: 'id' }).createIndex('by-model', 'modelId');
        db.createObjectStore('trajectoryLogs', { keyPath: 'id' }).createIndex('by-model', 'modelId');
        const jobs = db.createObjectStore('trainingJobs', { keyPath: 'id' });
        jobs.createIndex('by-model', 'modelId');
        jobs.createIndex('by-status-queue', ['status', 'queuedAt']);
        db.createObjectStore('jobInputs', { keyPath: 'jobId' });
        const events = db.createObjectStore('jobEvents', { keyPath: 'id' });
        events.createIndex('by-job-seq', ['jobId', 'seq'], { unique: true });
        db.createObjectStore('artifacts', { keyPath: 'id' }).createIndex('by-model', 'modelId');
      }
      if (oldVersion < 2) {
        // Issue 6: per-step progress of running training jobs (resume after a host change).
        db.createObjectStore('jobProgress', { keyPath: 'jobId' }).createIndex('by-model', 'modelId');
      }
      if (oldVersion < 3) {
        // Issue 7: base models downloaded or uploaded through /v1/preview/base-models.
        db.createObjectStore('baseModels', { keyPath: 'id' });
      }
      if (oldVersion < 4) {
        // Issue 10: trajectory groups one record each, paged through indexes; run history appended.
        const groups = db.createObjectStore('trajectoryGroups', { keyPath: 'id' });
        groups.createIndex('by-model-seq', ['modelId', 'seq'], { unique: true });
        groups.createIndex('by-model-split-seq', ['modelId', 'split', 'seq']);
        groups.createIndex('by-model-step-seq', ['modelId', 'step', 'seq']);
        groups.createIndex('by-model-split-step-seq', ['modelId', 'split', 'step', 'seq']);
        db.createObjectStore('runHistory', { keyPath: ['runId', 'seq'] });
        // The move runs inside the upgrade transaction; if it fails, the upgrade is undone (and openDB rejects).
        if (oldVersion >= 1) void moveToV4(tx).catch(() => tx.abort());
      }
      if (oldVersion < 5) {
        // Issue 11: settings the admin changes in the UI (the Hugging Face token and mirror).
        db.createObjectStore('settings', { keyPath: 'id' });
      }
    },
    blocking() {
      // A newer version of the app wants to upgrade: step aside rather than block it forever.
      if (opened) {
        upgradedAway.add(opened);
        opened.close();
      }
    },
  });
  return opened;
}
