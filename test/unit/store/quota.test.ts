// Quota failures: a write that the browser refuses for lack of space leaves nothing of the
// request behind and surfaces as StorageQuotaError, which the API answers with 507.
// Chromium's real quota cannot be lowered from a test (DevTools' overrideQuotaForOrigin is not
// enforced by this build), so the refusal is raised the way IndexedDB raises it: as a
// QuotaExceededError DOMException from inside a real (fake-indexeddb) transaction.
import 'fake-indexeddb/auto';
import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { onError } from '../../../src/api/errors';
import { openHearthDb } from '../../../src/store/open-db';
import { StorageQuotaError, writeTx } from '../../../src/store/tx';

/** A record whose structured clone fails with QuotaExceededError, as a full disk makes a put fail. */
function tooBig(id: string) {
  return {
    id,
    get payload(): never {
      throw new DOMException('The quota has been exceeded.', 'QuotaExceededError');
    },
  };
}

describe('writeTx', () => {
  it('turns a quota refusal into StorageQuotaError and keeps none of the transaction', async () => {
    const db = await openHearthDb('quota-test-1');
    const principal = { id: 'p1', name: 'x', entity: 'x', admin: false, createdAt: 0 };
    await expect(
      writeTx(db, ['principals', 'owner'], async (tx) => {
        await tx.objectStore('principals').add(principal);
        await tx.objectStore('owner').add(tooBig('admin') as never);
      }),
    ).rejects.toBeInstanceOf(StorageQuotaError);
    expect(await db.count('principals')).toBe(0);
    db.close();
  });

  it('aborts the transaction when its body throws any other error', async () => {
    const db = await openHearthDb('quota-test-2');
    await expect(
      writeTx(db, ['principals'], async (tx) => {
        await tx.objectStore('principals').add({ id: 'p1', name: 'x', entity: 'x', admin: false, createdAt: 0 });
        throw new Error('changed my mind');
      }),
    ).rejects.toThrow('changed my mind');
    expect(await db.count('principals')).toBe(0);
    db.close();
  });
});

describe('the API', () => {
  it('answers 507 with a message saying what to do', async () => {
    const app = new Hono().get('/v1/preview/x', () => {
      throw new StorageQuotaError();
    });
    app.onError(onError as never);
    const res = await app.request('/v1/preview/x');
    expect(res.status).toBe(507);
    expect((await res.json()).detail).toMatch(/quota .* exhausted, so nothing was written.*deleting checkpoints or models/);
  });
});
