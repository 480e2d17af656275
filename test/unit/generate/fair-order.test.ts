// Admission order of waiting requests (issue 26): the owner holding the fewest batch rows is
// offered a row first, counting what this pass admitted; each owner's requests keep their order.
import { describe, expect, it } from 'vitest';
import { fairOrder } from '../../../src/engine/generate/fair-order';

interface Req {
  id: string;
  owner: string;
  n: number;
}

/** Admits in fairOrder's order while `free` rows last (a request that does not fit is skipped); the ids admitted. */
function admit(waiting: Req[], held: Record<string, number>, free: number): string[] {
  const order = fairOrder(waiting, (r) => r.owner, new Map(Object.entries(held)));
  const out: string[] = [];
  for (let r = order.next(); r; r = order.next()) {
    if (r.n > free) continue;
    free -= r.n;
    out.push(r.id);
    order.took(r, r.n);
  }
  return out;
}

const req = (id: string, owner: string, n = 1): Req => ({ id, owner, n });

describe('fairOrder', () => {
  it('alternates between keys instead of serving one key burst first', () => {
    const burst = [req('a1', 'A'), req('a2', 'A'), req('a3', 'A'), req('a4', 'A'), req('b1', 'B'), req('b2', 'B')];
    expect(admit(burst, {}, 4)).toEqual(['a1', 'b1', 'a2', 'b2']);
  });

  it('offers the first free rows to the key that holds the fewest, counting rows, not requests', () => {
    // A holds 32 rows with one n = 32 request; B holds 2 rows with two requests: B goes first.
    const waiting = [req('a', 'A', 4), req('b', 'B', 4)];
    expect(admit(waiting, { A: 32, B: 2 }, 4)).toEqual(['b']);
    // A key's n = 8 request counts as 8 rows against it within the pass too.
    expect(admit([req('a8', 'A', 8), req('a1', 'A'), req('b1', 'B'), req('b2', 'B')], {}, 64)).toEqual(['a8', 'b1', 'b2', 'a1']);
  });

  it('keeps first come first served for one key, and offers every request once per pass', () => {
    const waiting = [req('x1', 'X', 3), req('x2', 'X'), req('x3', 'X')];
    expect(admit(waiting, {}, 2)).toEqual(['x2', 'x3']);
    expect(admit([], {}, 10)).toEqual([]);
  });
});
