/**
 * Model registration and checkpoint deletion bodies.
 *
 * Reference: docs/reference/art-compat.md §1.2 (ART's `models.create` always sends all five keys, `entity`
 * usually null) and §1.4; specification endpoints 7-9.
 */
import { z } from 'zod';
import { Name } from './common';
import { list } from './lists';

/** Most steps one checkpoint deletion names (issue 26: every list has a cap). */
const MAX_STEPS = 100_000;

export const RegisterModelRequest = z.strictObject({
  entity: Name.nullish(),
  project: Name,
  name: Name,
  base_model: z.string().min(1),
  return_existing: z.boolean().nullish(),
});
export type RegisterModelRequest = z.infer<typeof RegisterModelRequest>;

export const DeleteCheckpointsRequest = z.strictObject({
  steps: list(z.int().min(0), MAX_STEPS),
});
