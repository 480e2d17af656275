/**
 * /v1/preview/api-keys (Hearth's own, admin only): create a key for a new principal (the secret
 * is in this response and nowhere else), list keys without secrets, revoke a key (the last key of
 * a principal ends its jobs and streams); and DELETE /v1/preview/api-keys/principals/{id}, which
 * deletes a principal with its keys and everything it owns.
 */
import { Hono } from 'hono';
import { createApiKey, listApiKeys, revokeApiKey } from '../../service/api-keys';
import { requireJsonBody } from '../body-type';
import { deletePrincipal } from '../../service/principal-activity';
import type { AppEnv } from '../env';
import { CreateApiKeyRequest } from '../schemas/api-keys';
import { IdParam } from '../schemas/common';
import { previewValidator } from '../validation';

export const apiKeys = new Hono<AppEnv>();

apiKeys.post('/', requireJsonBody(), previewValidator('json', CreateApiKeyRequest), async (c) => {
  const services = c.get('deps').services;
  const created = await createApiKey(services.db, c.get('principal'), c.req.valid('json'), services.now());
  return c.json({ object: 'api_key', ...created });
});

apiKeys.get('/', async (c) => {
  const keys = await listApiKeys(c.get('deps').services.db, c.get('principal'));
  const data = keys.map((k) => ({ object: 'api_key', ...k }));
  return c.json({ object: 'list', data, has_more: false, first_id: data[0]?.id ?? '', last_id: data.at(-1)?.id ?? '' });
});

apiKeys.delete('/:id', previewValidator('param', IdParam), async (c) => {
  return c.json(await revokeApiKey(c.get('deps').services, c.get('principal'), c.req.valid('param').id));
});

apiKeys.delete('/principals/:id', previewValidator('param', IdParam), async (c) => {
  const id = c.req.valid('param').id;
  const deletion = await deletePrincipal(c.get('deps').services, c.get('principal'), id);
  return c.json({ id, object: 'principal', deleted: true, deleted_keys: deletion.deletedKeys, deleted_models: deletion.models.length });
});
