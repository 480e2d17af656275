/**
 * The store's named error for a record that vanished under a write: a model deleted (by another
 * request or tab) between the service's check and the transaction that writes what it owns. The
 * API answers it 404 in the route family's envelope (src/api/errors.ts), as if the model had been
 * gone before the request began; the aborted transaction wrote nothing.
 *
 * Not here: the quota failure (tx.ts StorageQuotaError), unknown page cursors (page.ts).
 * Reference: docs/design.md "Records" (a delete leaves nothing orphaned) and "Errors".
 */
import type { ModelRecord } from './schema';

export class StoreNotFoundError extends Error {
  override name = 'StoreNotFoundError';
}

/**
 * Throws StoreNotFoundError unless the model exists (and, with `principalId`, belongs to that
 * principal). Call it inside the write transaction, so a concurrent delete cannot slip between.
 */
export async function requireModelInTx(
  models: { get(id: string): Promise<ModelRecord | undefined> },
  modelId: string,
  principalId?: string,
): Promise<void> {
  const model = await models.get(modelId);
  if (!model || (principalId !== undefined && model.principalId !== principalId)) {
    throw new StoreNotFoundError(`Model ${modelId} no longer exists.`);
  }
}
