/**
 * Repository of principals, their API keys (hashed) and the local owner's admin key.
 *
 * Not here: key generation and hashing (src/service/api-keys.ts); who may call what (the
 * service). Revoking its keys ends its access, its data stays until the admin deletes the principal
 * (cascade.ts).
 */
import type { ApiKeyRecord, HearthDb, OwnerRecord, PrincipalRecord } from './schema';
import { writeTx } from './tx';

/** Creates a principal with its first key; `owner` is set only for the admin on first start. */
export async function insertPrincipalWithKey(
  db: HearthDb,
  principal: PrincipalRecord,
  key: ApiKeyRecord,
  owner?: OwnerRecord,
): Promise<void> {
  await writeTx(db, ['principals', 'apiKeys', 'owner'], async (tx) => {
    if (owner && (await tx.objectStore('owner').get('admin'))) {
      throw new Error('The admin principal already exists.');
    }
    await tx.objectStore('principals').add(principal);
    await tx.objectStore('apiKeys').add(key);
    if (owner) await tx.objectStore('owner').add(owner);
  });
}

export async function getOwner(db: HearthDb): Promise<OwnerRecord | undefined> {
  return db.get('owner', 'admin');
}

export async function getPrincipal(db: HearthDb, id: string): Promise<PrincipalRecord | undefined> {
  return db.get('principals', id);
}

export async function findKeyByHash(db: HearthDb, hash: string): Promise<ApiKeyRecord | undefined> {
  return db.getFromIndex('apiKeys', 'by-hash', hash);
}

export async function listKeys(db: HearthDb): Promise<ApiKeyRecord[]> {
  const keys = await db.getAll('apiKeys');
  return keys.sort((a, b) => a.createdAt - b.createdAt || a.id.localeCompare(b.id));
}

export async function getKey(db: HearthDb, id: string): Promise<ApiKeyRecord | undefined> {
  return db.get('apiKeys', id);
}

export async function deleteKey(db: HearthDb, id: string): Promise<boolean> {
  return writeTx(db, ['apiKeys'], async (tx) => {
    const store = tx.objectStore('apiKeys');
    if (!(await store.get(id))) return false;
    await store.delete(id);
    return true;
  });
}

/** How many keys `principalId` still has. */
export async function countKeys(db: HearthDb, principalId: string): Promise<number> {
  return db.countFromIndex('apiKeys', 'by-principal', principalId);
}
