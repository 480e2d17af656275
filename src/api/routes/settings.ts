/**
 * /v1/preview/settings (Hearth's own, the Settings view): GET says whether a Hugging Face token is
 * set and which mirror downloads use; PATCH (admin key) sets or removes them. The token itself is
 * never returned.
 */
import { Hono } from 'hono';
import { readHubSettings, updateHubSettings } from '../../service/hub-settings';
import { adminOnly } from '../auth';
import { requireJsonBody } from '../body-type';
import type { AppEnv } from '../env';
import { UpdateSettingsRequest } from '../schemas/settings';
import { previewValidator } from '../validation';

export const settings = new Hono<AppEnv>();

settings.get('/', async (c) => c.json(await readHubSettings(c.get('deps').services.db)));

settings.patch(
  '/',
  adminOnly('Changing the Hugging Face settings'),
  requireJsonBody(),
  previewValidator('json', UpdateSettingsRequest),
  async (c) => {
    const body = c.req.valid('json');
    const services = c.get('deps').services;
    return c.json(await updateHubSettings(services.db, { token: body.huggingface_token, mirror: body.huggingface_mirror }, services.now()));
  },
);
