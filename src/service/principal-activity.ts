/**
 * Ending everything a principal has going when it loses access (issue 10, item 8): when its last
 * key is revoked, or the admin deletes it, its queued jobs end FAILED with a `training_failed`
 * event saying why, its running job is stopped the same way (the runner writes the event), and
 * its open requests (chat streams, engine feeds) are aborted, so nothing keeps running for a key
 * that no longer exists. Deleting a principal then removes it with its keys and everything it
 * owns in one cascade.
 *
 * Not here: the key records (api-keys.ts), the cascade itself (store/cascade.ts), how a request
 * is registered (src/api/open-requests.ts).
 */
import { deletePrincipalCascade, type PrincipalDeletion } from '../store/cascade';
import { getOwner } from '../store/principals';
import { jobsWithStatus, JobStatusConflictError } from '../store/training-jobs';
import type { Principal } from './principal';
import type { ServiceContext } from './context';
import { ConflictError, ForbiddenError, NotFoundError } from './errors';

/** The requests in flight per principal, each with the controller that aborts it. */
export class OpenRequests {
  private readonly byPrincipal = new Map<string, Set<AbortController>>();

  /** Registers a request; call the result when it has ended. */
  open(principalId: string, controller: AbortController): () => void {
    const set = this.byPrincipal.get(principalId) ?? new Set();
    set.add(controller);
    this.byPrincipal.set(principalId, set);
    return () => {
      set.delete(controller);
      if (set.size === 0 && this.byPrincipal.get(principalId) === set) this.byPrincipal.delete(principalId);
    };
  }

  abortAll(principalId: string, reason: string): number {
    const set = this.byPrincipal.get(principalId);
    this.byPrincipal.delete(principalId);
    for (const c of set ?? []) c.abort(new DOMException(reason, 'AbortError'));
    return set?.size ?? 0;
  }
}

// One registry per service context (one per engine), kept beside it rather than in it so that
// the engine's boot needs no change to carry it.
const registries = new WeakMap<ServiceContext, OpenRequests>();

export function openRequests(ctx: ServiceContext): OpenRequests {
  let r = registries.get(ctx);
  if (!r) registries.set(ctx, (r = new OpenRequests()));
  return r;
}

/** Fails the principal's queued jobs, stops its running one and aborts its open requests. */
export async function endPrincipalActivity(ctx: ServiceContext, principalId: string, reason: string): Promise<void> {
  openRequests(ctx).abortAll(principalId, reason);
  const mine = async (status: 'PENDING' | 'RUNNING') => (await jobsWithStatus(ctx.db, status)).filter((j) => j.principalId === principalId);
  for (const job of await mine('PENDING')) {
    try {
      // Through the runner, which ends it even when storage is full (the key is gone already).
      await ctx.jobs.failQueued(job.id, reason);
    } catch (err) {
      // Started meanwhile: it is stopped with the running ones below.
      if (!(err instanceof JobStatusConflictError)) throw err;
    }
  }
  for (const job of await mine('RUNNING')) ctx.jobs.cancel(job.id, reason);
}

/**
 * Deletes a principal with its keys and everything it owns (admin only; never the owner's own).
 * Its activity ends first, so a running job does not write after its records are gone.
 */
export async function deletePrincipal(ctx: ServiceContext, caller: Principal, principalId: string): Promise<PrincipalDeletion> {
  if (!caller.admin) throw new ForbiddenError('Deleting a principal needs the admin key.');
  if ((await getOwner(ctx.db))?.principalId === principalId) {
    throw new ConflictError("The owner's admin principal cannot be deleted: it is how this browser's user manages Hearth.");
  }
  await endPrincipalActivity(ctx, principalId, 'The principal that owned this was deleted by the admin.');
  const deletion = await deletePrincipalCascade(ctx.db, principalId);
  if (!deletion) throw new NotFoundError(`Principal ${principalId} not found.`);
  return deletion;
}
