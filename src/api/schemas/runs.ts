/**
 * Query parameters of the Runs and job-list endpoints (Hearth extensions for the app's views):
 * GET /v1/preview/training-jobs, GET /v1/preview/models/{id}/trajectories.
 */
import { z } from 'zod';
import { ListQuery, Name, queryInt } from './common';

/** Jobs are listed newest first unless `order=asc`. */
export const JobListQuery = ListQuery.extend({
  model_id: z.string().min(1).optional(),
  order: z.enum(['asc', 'desc']).default('desc'),
});

/** An optional non-negative query integer: absent stays absent, a non-number is `int_parsing`. */
const optionalStep = z
  .string()
  .optional()
  .transform((raw, ctx) => {
    if (raw === undefined || raw === '') return undefined;
    if (!/^\+?\d+$/.test(raw.trim())) {
      ctx.addIssue({ code: 'custom', message: 'Input should be a valid non-negative integer', params: { type: 'int_parsing' } });
      return z.NEVER;
    }
    return Number(raw.trim());
  });

export const TrajectoryListQuery = z.object({
  split: Name.optional(),
  step: optionalStep,
  after: z.string().min(1).optional(),
  limit: queryInt(1, 100, 20),
});
