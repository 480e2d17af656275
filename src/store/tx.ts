/**
 * One helper for every multi-record write: run a function inside one IndexedDB transaction and
 * settle only when the transaction has committed. If the function throws, the transaction is
 * aborted, so nothing of a failed request is written. A quota failure becomes StorageQuotaError.
 *
 * Not here: what is written (the repositories). Reference: idb README "Transaction lifetime":
 * never await anything but IndexedDB requests inside `fn`, or the transaction auto-commits early.
 */
import type { IDBPTransaction, StoreNames } from 'idb';
import type { HearthDb, HearthSchema } from './schema';

/** The browser refused to store more: the request wrote nothing. */
export class StorageQuotaError extends Error {
  override name = 'StorageQuotaError';
  constructor(cause?: unknown) {
    super(
      'The browser storage quota for this site is exhausted, so nothing was written. ' +
        'Free space by deleting checkpoints or models, or allow this site more storage.',
      { cause },
    );
  }
}

export type WriteTx<S extends StoreNames<HearthSchema>[]> = IDBPTransaction<HearthSchema, S, 'readwrite'>;

function isQuotaError(e: unknown): boolean {
  return typeof e === 'object' && e !== null && (e as { name?: string }).name === 'QuotaExceededError';
}

/**
 * Runs `fn` in a readwrite transaction over `stores` and resolves with its result once the
 * transaction has committed. All of `fn`'s writes land together or not at all.
 */
export async function writeTx<S extends StoreNames<HearthSchema>[], T>(
  db: HearthDb,
  stores: S,
  fn: (tx: WriteTx<S>) => Promise<T>,
): Promise<T> {
  const tx = db.transaction(stores, 'readwrite');
  let result: T;
  try {
    result = await fn(tx);
  } catch (err) {
    try {
      tx.abort();
    } catch {
      // Already finished or aborted: the error below is what matters.
    }
    await tx.done.catch(() => undefined);
    if (isQuotaError(err) || isQuotaError(tx.error)) throw new StorageQuotaError(err);
    throw err;
  }
  try {
    await tx.done;
  } catch (err) {
    if (isQuotaError(err) || isQuotaError(tx.error)) throw new StorageQuotaError(err);
    throw err;
  }
  return result;
}
