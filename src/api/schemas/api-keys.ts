/**
 * POST /v1/preview/api-keys body: a name for the new principal and, optionally, its default
 * entity (the namespace models registered with `entity: null` go to; defaults to the name).
 */
import { z } from 'zod';
import { Name } from './common';

export const CreateApiKeyRequest = z.strictObject({
  name: Name.max(64),
  entity: Name.max(64).nullish(),
});
