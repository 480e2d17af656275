// Job queue fairness (issue 10, item 7): round-robin across principals, queue order within one.
import { describe, expect, it } from 'vitest';
import { nextRoundRobin } from '../../../src/service/training/runner';
import type { TrainingJobRecord } from '../../../src/store/schema';

const job = (id: string, principalId: string, queuedAt: number) => ({ id, principalId, queuedAt }) as TrainingJobRecord;

describe('nextRoundRobin', () => {
  it('takes turns between principals, oldest first within each', () => {
    let pending = [job('a1', 'a', 1), job('a2', 'a', 2), job('a3', 'a', 3), job('b1', 'b', 4), job('c1', 'c', 5), job('b2', 'b', 6)];
    const served = new Map<string, number>();
    const order: string[] = [];
    for (let turn = 1; pending.length > 0; turn++) {
      const next = nextRoundRobin(pending, served)!;
      order.push(next.id);
      served.set(next.principalId, turn);
      pending = pending.filter((j) => j !== next);
    }
    expect(order).toEqual(['a1', 'b1', 'c1', 'a2', 'b2', 'a3']);
  });

  it('serves a principal that never ran before one that just did', () => {
    expect(nextRoundRobin([job('a2', 'a', 1), job('b1', 'b', 2)], new Map([['a', 7]]))?.id).toBe('b1');
    expect(nextRoundRobin([], new Map())).toBeUndefined();
  });
});
