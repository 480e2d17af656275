/**
 * Who is calling: the principal that routes and services see after authentication
 * (api-keys.ts resolves a bearer token to one). Kept apart from the key management so that the
 * many services that only check ownership import this type and nothing else.
 */
import type { PrincipalRecord } from '../store/schema';

export interface Principal {
  id: string;
  name: string;
  entity: string;
  admin: boolean;
}

export function toPrincipal(p: PrincipalRecord): Principal {
  return { id: p.id, name: p.name, entity: p.entity, admin: p.admin };
}
