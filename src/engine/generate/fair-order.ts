/**
 * The order in which the scheduler tries to admit waiting requests: fair across owners (API
 * keys), first come first served within one owner (issue 26). Each pick goes to the owner that
 * holds the fewest batch rows, counting the rows admitted during this pass; ties go to the
 * earliest arrival. So one key's burst of requests cannot take every row that frees up while
 * another key's request waits behind it. Every waiting request is offered once per pass.
 *
 * Not here: whether a request fits (the scheduler's rows and KV blocks), the per-key row cap
 * (src/api/chat-concurrency.ts).
 */

export interface FairOrder<T> {
  /** The next request to try, or undefined when every one was offered. */
  next(): T | undefined;
  /** `item` was admitted and now holds `rows` rows. */
  took(item: T, rows: number): void;
}

/** `waiting` in arrival order; `held` the rows each owner's running requests hold now. */
export function fairOrder<T>(waiting: readonly T[], ownerOf: (item: T) => string, held: ReadonlyMap<string, number>): FairOrder<T> {
  const queues = new Map<string, { item: T; at: number }[]>();
  waiting.forEach((item, at) => {
    const owner = ownerOf(item);
    const queue = queues.get(owner);
    if (queue) queue.push({ item, at });
    else queues.set(owner, [{ item, at }]);
  });
  const rows = new Map(held);
  const rowsOf = (owner: string) => rows.get(owner) ?? 0;
  return {
    next() {
      let best: string | undefined;
      for (const [owner, queue] of queues) {
        if (best === undefined) {
          best = owner;
          continue;
        }
        const d = rowsOf(owner) - rowsOf(best);
        if (d < 0 || (d === 0 && queue[0].at < queues.get(best)![0].at)) best = owner;
      }
      if (best === undefined) return undefined;
      const queue = queues.get(best)!;
      const { item } = queue.shift()!;
      if (queue.length === 0) queues.delete(best);
      return item;
    },
    took(item, n) {
      const owner = ownerOf(item);
      rows.set(owner, rowsOf(owner) + n);
    },
  };
}
