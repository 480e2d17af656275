/**
 * Body of PATCH /v1/preview/settings (Hearth's own): the Hugging Face access token and mirror.
 * Loose on purpose: zod's detail items echo the offending input (or, for an unknown key, the whole
 * body), and the token must never come back in an answer; service/hub-settings.ts checks it.
 */
import { z } from 'zod';

export const UpdateSettingsRequest = z.looseObject({
  /** A token for huggingface.co and the configured mirror; null or "" removes it. */
  huggingface_token: z.unknown().optional(),
  /** Base URL of a mirror laid out like huggingface.co; null removes it. */
  huggingface_mirror: z.url({ protocol: /^https?$/ }).nullish(),
});
