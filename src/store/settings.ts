/**
 * Repository of the admin's settings: the Hugging Face access token and mirror (one record), and
 * the engine's backend choice (another).
 * The token is stored as given: IndexedDB is this browser profile's own, like the admin key it
 * keeps (schema.ts OwnerRecord); it leaves the engine only as a request header (hub-auth.ts).
 *
 * Not here: who may change them (the route), where the token may be sent.
 */
import type { EngineSettingsRecord, HearthDb, HubSettingsRecord } from './schema';

export async function getHubSettings(db: HearthDb): Promise<HubSettingsRecord | undefined> {
  const r = await db.get('settings', 'huggingface');
  return r?.id === 'huggingface' ? r : undefined;
}

export async function getEngineSettings(db: HearthDb): Promise<EngineSettingsRecord | undefined> {
  const r = await db.get('settings', 'engine');
  return r?.id === 'engine' ? r : undefined;
}

export async function putEngineSettings(db: HearthDb, record: EngineSettingsRecord): Promise<void> {
  await db.put('settings', record);
}

export async function putHubSettings(db: HearthDb, record: HubSettingsRecord): Promise<void> {
  await db.put('settings', record);
}
