/**
 * GET /v1/preview/storage (Hearth extension, admin only): the origin's storage use and quota,
 * and Hearth's bytes per kind (weights, checkpoints, trajectories, artifacts, other).
 */
import { Hono } from 'hono';
import { storageReport } from '../../service/storage';
import type { AppEnv } from '../env';

export const storage = new Hono<AppEnv>();

storage.get('/', async (c) => {
  return c.json({ object: 'storage', ...(await storageReport(c.get('deps').services, c.get('principal'))) });
});
