/**
 * Repository of the admin's settings: the Hugging Face access token and mirror (one record).
 * The token is stored as given: IndexedDB is this browser profile's own, like the admin key it
 * keeps (schema.ts OwnerRecord); it leaves the engine only as a request header (hub-auth.ts).
 *
 * Not here: who may change them (the route), where the token may be sent.
 */
import type { HearthDb, HubSettingsRecord } from './schema';

export async function getHubSettings(db: HearthDb): Promise<HubSettingsRecord | undefined> {
  return db.get('settings', 'huggingface');
}

export async function putHubSettings(db: HearthDb, record: HubSettingsRecord): Promise<void> {
  await db.put('settings', record);
}
