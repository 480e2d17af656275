/**
 * Body of POST /v1/preview/base-models: where to download a base model from, a Hugging Face
 * repository (optionally a revision and a mirror's base URL) or a URL of a folder laid out like
 * one.
 */
import { z } from 'zod';

const HttpUrl = z.url({ protocol: /^https?$/ });

export const DownloadBaseModelRequest = z.strictObject({
  source: z.discriminatedUnion('type', [
    z.strictObject({
      type: z.literal('huggingface'),
      repo: z.string().min(1),
      revision: z.string().min(1).nullish(),
      base_url: HttpUrl.nullish(),
    }),
    z.strictObject({ type: z.literal('url'), url: HttpUrl }),
  ]),
});

/** Path parameter `{id}`: an HF-style "org/name", sent encoded (%2F) or not. */
export const BaseModelIdParam = z.object({ id: z.string().min(1) });
