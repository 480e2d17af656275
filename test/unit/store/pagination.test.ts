// Cursor pagination semantics shared by every list (specification "List envelope").
import { describe, expect, it } from 'vitest';
import { listEnvelope } from '../../../src/api/schemas/common';
import { paginate, UnknownCursorError } from '../../../src/store/page';

const items = Array.from({ length: 7 }, (_, i) => ({ id: `id${i}`, n: i }));
const id = (x: { id: string }) => x.id;

function walk(order: 'asc' | 'desc', limit: number): number[][] {
  const pages: number[][] = [];
  let after: string | undefined;
  for (;;) {
    const page = paginate(items, { after, limit, order }, id);
    pages.push(page.items.map((x) => x.n));
    if (!page.hasMore) return pages;
    after = page.items.at(-1)!.id;
  }
}

describe('paginate', () => {
  it('walks the whole list in pages with after = last id, has_more false only on the last page', () => {
    expect(walk('asc', 3)).toEqual([[0, 1, 2], [3, 4, 5], [6]]);
    expect(walk('desc', 3)).toEqual([[6, 5, 4], [3, 2, 1], [0]]);
  });

  it('says has_more false when the page ends exactly at the end', () => {
    expect(walk('asc', 7)).toEqual([[0, 1, 2, 3, 4, 5, 6]]);
    const last = paginate(items, { after: 'id3', limit: 3, order: 'asc' }, id);
    expect(last.items.map((x) => x.n)).toEqual([4, 5, 6]);
    expect(last.hasMore).toBe(false);
  });

  it('returns an empty page after the last item', () => {
    const page = paginate(items, { after: 'id6', limit: 3, order: 'asc' }, id);
    expect(page).toEqual({ items: [], hasMore: false });
  });

  it('refuses a cursor that names no item', () => {
    expect(() => paginate(items, { after: 'nope', limit: 3, order: 'asc' }, id)).toThrow(UnknownCursorError);
  });
});

describe('listEnvelope', () => {
  it('reports first_id and last_id of the page, empty strings for an empty page', () => {
    const full = listEnvelope({ items: items.slice(1, 4), hasMore: true }, (x) => ({ id: x.id }));
    expect(full).toEqual({
      object: 'list',
      data: [{ id: 'id1' }, { id: 'id2' }, { id: 'id3' }],
      has_more: true,
      first_id: 'id1',
      last_id: 'id3',
    });
    const empty = listEnvelope({ items: [], hasMore: false }, (x: { id: string }) => x);
    expect(empty).toEqual({ object: 'list', data: [], has_more: false, first_id: '', last_id: '' });
  });
});
