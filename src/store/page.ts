/**
 * Cursor pagination shared by every list: items in a fixed order, an optional `after` cursor
 * (the id of the last item of the previous page, exclusive) and a limit. A page reports
 * `hasMore` by looking one item past the limit, never by counting the whole list.
 *
 * Not here: the list envelope the API sends (src/api/schemas/common.ts maps a Page to it).
 */

export interface Page<T> {
  items: T[];
  hasMore: boolean;
}

export type SortOrder = 'asc' | 'desc';

export interface PageRequest {
  /** Id of the item the page starts after; undefined starts at the beginning. */
  after?: string;
  limit: number;
  order: SortOrder;
}

/** The cursor names no item of this list (deleted meanwhile, or another list's id). */
export class UnknownCursorError extends Error {
  override name = 'UnknownCursorError';
  constructor(readonly cursor: string) {
    super(`No item with id "${cursor}" in this list: pass the id of an item of the previous page as "after".`);
  }
}

/**
 * Pages an in-memory list. `items` must already be sorted ascending by the list's key; `order`
 * desc walks it backwards. Used where a principal's list is small (models); long lists
 * (checkpoints, events) page inside IndexedDB with the same semantics.
 */
export function paginate<T>(items: readonly T[], req: PageRequest, idOf: (item: T) => string): Page<T> {
  const ordered = req.order === 'desc' ? [...items].reverse() : [...items];
  let start = 0;
  if (req.after !== undefined) {
    const at = ordered.findIndex((item) => idOf(item) === req.after);
    if (at < 0) throw new UnknownCursorError(req.after);
    start = at + 1;
  }
  const window = ordered.slice(start, start + req.limit + 1);
  return { items: window.slice(0, req.limit), hasMore: window.length > req.limit };
}

/** Turns limit+1 fetched rows into a page. */
export function pageFromOverfetch<T>(rows: T[], limit: number): Page<T> {
  return { items: rows.slice(0, limit), hasMore: rows.length > limit };
}
