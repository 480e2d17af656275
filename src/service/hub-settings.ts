/**
 * The Hugging Face settings (GET/PATCH /v1/preview/settings, the Settings view): an access token
 * for gated repositories and the mirror to download from. The token is write-only: the view says
 * whether one is set, never what it is, and a refused token is not echoed in the 422.
 *
 * Not here: where the token may be sent (engine/model/sources/hub-auth.ts), storage (store/settings.ts).
 */
import type { HubCredentials } from '../engine/model/sources/hub-auth';
import { getHubSettings, putHubSettings } from '../store/settings';
import type { HearthDb, HubSettingsRecord } from '../store/schema';
import { InvalidInputError } from './errors';

export interface HubSettingsView {
  object: 'settings';
  huggingface: { token_set: boolean; mirror: string | null };
}

export interface HubSettingsChange {
  /** A new token; null or "" removes it; absent keeps it. */
  token?: unknown;
  /** A new mirror base URL; null removes it; absent keeps it. */
  mirror?: string | null;
}

/** Printable ASCII without spaces: what a header value may carry (hf_... tokens are such). */
const TOKEN = /^[\x21-\x7e]{1,1024}$/;

function view(r: HubSettingsRecord | undefined): HubSettingsView {
  return { object: 'settings', huggingface: { token_set: !!r?.token, mirror: r?.mirror ?? null } };
}

export async function readHubSettings(db: HearthDb): Promise<HubSettingsView> {
  return view(await getHubSettings(db));
}

export async function updateHubSettings(db: HearthDb, change: HubSettingsChange, now: number): Promise<HubSettingsView> {
  const current = (await getHubSettings(db)) ?? { id: 'huggingface' as const, token: null, mirror: null, updatedAt: now };
  let token = current.token;
  if (change.token !== undefined) {
    if (change.token === null || change.token === '') token = null;
    else if (typeof change.token !== 'string' || !TOKEN.test(change.token)) {
      // The input is not echoed: it may be a real token with a stray character.
      throw new InvalidInputError(['body', 'huggingface_token'], 'The token must be 1 to 1024 printable characters without spaces.', null);
    } else token = change.token;
  }
  let mirror = current.mirror;
  if (change.mirror !== undefined) {
    const u = change.mirror === null ? null : new URL(change.mirror);
    if (u && (u.username || u.password || u.search || u.hash)) {
      throw new InvalidInputError(
        ['body', 'huggingface_mirror'],
        'The mirror URL must not carry a user name, password, query or fragment.',
        null,
      );
    }
    mirror = change.mirror === null ? null : change.mirror.replace(/\/+$/, '');
  }
  const record: HubSettingsRecord = { id: 'huggingface', token, mirror, updatedAt: now };
  await putHubSettings(db, record);
  return view(record);
}

/** The token and the mirror it may go to, for the downloader; null without a token. */
export async function hubCredentials(db: HearthDb): Promise<HubCredentials | null> {
  const r = await getHubSettings(db);
  return r?.token ? { token: r.token, mirror: r.mirror } : null;
}

/** The mirror downloads from the hub use when a request names none. */
export async function defaultHubMirror(db: HearthDb): Promise<string | null> {
  return (await getHubSettings(db))?.mirror ?? null;
}
