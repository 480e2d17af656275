/**
 * API keys and principals: minting and hashing keys, the admin key created on first start,
 * authenticating a bearer token, and the admin-only key management behind /v1/preview/api-keys.
 *
 * Keys are 32 random bytes, so an unsalted SHA-256 is enough to store them (a guess costs 2^256
 * tries; salting protects low-entropy passwords, not random tokens). The plaintext is returned
 * once; only the admin key's plaintext is also kept, for the local owner (see OwnerRecord).
 *
 * Not here: the HTTP middleware (src/api/auth.ts), the Principal type (principal.ts).
 */
import type { ApiKeyRecord, HearthDb, PrincipalRecord } from '../store/schema';
import { countKeys, deleteKey, findKeyByHash, getKey, getOwner, getPrincipal, insertPrincipalWithKey, listKeys } from '../store/principals';
import type { ServiceContext } from './context';
import { ConflictError, ForbiddenError, NotFoundError, UnauthorizedError } from './errors';
import { base64url, newId } from './ids';
import { endPrincipalActivity } from './principal-activity';
import { toPrincipal, type Principal } from './principal';

export const KEY_PREFIX = 'hth_';
const SHOWN_PREFIX_LENGTH = KEY_PREFIX.length + 6;
export const ADMIN_ENTITY = 'local';

export function mintKey(): string {
  return KEY_PREFIX + base64url(crypto.getRandomValues(new Uint8Array(32)));
}

export async function hashKey(key: string): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(key));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, '0')).join('');
}

async function keyRecord(key: string, principalId: string, name: string, now: number): Promise<ApiKeyRecord> {
  return { id: newId(), principalId, name, hash: await hashKey(key), prefix: key.slice(0, SHOWN_PREFIX_LENGTH), createdAt: now };
}

/** Creates the admin principal and its key on first start; returns the admin key either way. */
export async function ensureAdmin(db: HearthDb, now: number): Promise<string> {
  const existing = await getOwner(db);
  if (existing) return existing.key;
  const principal: PrincipalRecord = { id: newId(), name: 'admin', entity: ADMIN_ENTITY, admin: true, createdAt: now };
  const key = mintKey();
  const record = await keyRecord(key, principal.id, 'admin', now);
  try {
    await insertPrincipalWithKey(db, principal, record, { id: 'admin', principalId: principal.id, keyId: record.id, key });
    return key;
  } catch (err) {
    // Another engine start won the race: use its key.
    const winner = await getOwner(db);
    if (winner) return winner.key;
    throw err;
  }
}

/** Resolves an `Authorization` header value to its principal. */
export async function authenticate(db: HearthDb, authorization: string | undefined): Promise<Principal> {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
  if (!match) {
    throw new UnauthorizedError(
      authorization
        ? 'The Authorization header must be "Bearer <api key>".'
        : 'Missing Authorization header: send "Authorization: Bearer <api key>".',
    );
  }
  const record = await findKeyByHash(db, await hashKey(match[1]));
  const principal = record && (await getPrincipal(db, record.principalId));
  if (!principal) throw new UnauthorizedError('Invalid API key: it does not exist or was revoked.');
  return toPrincipal(principal);
}

function requireAdmin(caller: Principal): void {
  if (!caller.admin) throw new ForbiddenError('Managing API keys needs the admin key.');
}

export interface ApiKeyView {
  id: string;
  name: string;
  principal_id: string;
  entity: string;
  admin: boolean;
  prefix: string;
  created_at: string;
}

async function view(db: HearthDb, record: ApiKeyRecord): Promise<ApiKeyView> {
  const principal = await getPrincipal(db, record.principalId);
  return {
    id: record.id,
    name: record.name,
    principal_id: record.principalId,
    entity: principal?.entity ?? '',
    admin: principal?.admin ?? false,
    prefix: record.prefix,
    created_at: new Date(record.createdAt).toISOString(),
  };
}

export interface CreateKeyRequest {
  name: string;
  entity?: string | null;
}

/** Creates a new principal with a key; the key's secret is in the result and nowhere else. */
export async function createApiKey(
  db: HearthDb,
  caller: Principal,
  req: CreateKeyRequest,
  now: number,
): Promise<ApiKeyView & { key: string }> {
  requireAdmin(caller);
  const principal: PrincipalRecord = { id: newId(), name: req.name, entity: req.entity ?? req.name, admin: false, createdAt: now };
  const key = mintKey();
  const record = await keyRecord(key, principal.id, req.name, now);
  await insertPrincipalWithKey(db, principal, record);
  return { ...(await view(db, record)), key };
}

export async function listApiKeys(db: HearthDb, caller: Principal): Promise<ApiKeyView[]> {
  requireAdmin(caller);
  return Promise.all((await listKeys(db)).map((k) => view(db, k)));
}

/**
 * Revokes a key. When it was its principal's last, everything the principal has going ends
 * (principal-activity.ts): its jobs fail saying why, its open streams close.
 */
export async function revokeApiKey(
  ctx: ServiceContext,
  caller: Principal,
  id: string,
): Promise<{ id: string; object: 'api_key'; deleted: true }> {
  const db = ctx.db;
  requireAdmin(caller);
  const record = await getKey(db, id);
  if (!record) throw new NotFoundError(`API key ${id} not found.`);
  const owner = await getOwner(db);
  if (owner?.keyId === id) {
    throw new ConflictError("The owner's admin key cannot be revoked: it is how this browser's user manages Hearth.");
  }
  await deleteKey(db, id);
  if ((await countKeys(db, record.principalId)) === 0) {
    await endPrincipalActivity(ctx, record.principalId, `The API key "${record.name}" was revoked, and it was its principal's last key.`);
  }
  return { id, object: 'api_key', deleted: true };
}
