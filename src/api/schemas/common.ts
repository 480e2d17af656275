/**
 * Shapes shared by the /v1/preview route families: the list envelope and its query parameters,
 * and the name pattern used for entities, projects, model names and splits.
 *
 * Reference: specification "List envelope", endpoint 7 query parameters; openai-python
 * `AsyncCursorPage` (ART iterates `data` and pages with `after=<last item id>`).
 */
import { z } from 'zod';
import type { Page } from '../../store/page';

/** A query-string integer with FastAPI's `int_parsing` error for non-numbers. */
export function queryInt(min: number, max: number, fallback: number) {
  return z
    .string()
    .optional()
    .transform((raw, ctx) => {
      if (raw === undefined || raw === '') return fallback;
      if (!/^[+-]?\d+$/.test(raw.trim())) {
        ctx.addIssue({
          code: 'custom',
          message: 'Input should be a valid integer, unable to parse string as an integer',
          params: { type: 'int_parsing' },
        });
        return z.NEVER;
      }
      return Number(raw.trim());
    })
    .pipe(z.int().min(min).max(max));
}

/** `after`, `limit` (1..100, default 20), `order` (asc|desc, default asc). */
export const ListQuery = z.object({
  after: z.string().min(1).optional(),
  limit: queryInt(1, 100, 20),
  order: z.enum(['asc', 'desc']).default('asc'),
});
export type ListQuery = z.infer<typeof ListQuery>;

/** Events are listed in creation order only. */
export const EventsQuery = z.object({
  after: z.string().min(1).optional(),
  limit: queryInt(1, 100, 20),
});

/** Names that become parts of inference names and metric keys: letters, digits, `_.-`. */
export const Name = z
  .string()
  .min(1)
  .max(128)
  .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]*$/);

export interface ListEnvelope<T> {
  object: 'list';
  data: T[];
  has_more: boolean;
  first_id: string;
  last_id: string;
}

/** The list envelope of a page; `first_id`/`last_id` are "" for an empty page (spec default). */
export function listEnvelope<R, T extends { id: string }>(page: Page<R>, view: (r: R) => T): ListEnvelope<T> {
  const data = page.items.map(view);
  return {
    object: 'list',
    data,
    has_more: page.hasMore,
    first_id: data[0]?.id ?? '',
    last_id: data[data.length - 1]?.id ?? '',
  };
}

/** Path parameter `{id}`: any non-empty string (an unknown id is a 404, not a 422). */
export const IdParam = z.object({ id: z.string().min(1) });
