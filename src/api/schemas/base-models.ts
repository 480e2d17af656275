/**
 * Body of POST /v1/preview/base-models: where to download a base model from, a Hugging Face
 * repository (optionally a revision and a mirror's base URL; with `file`, one GGUF file of it, or
 * any part of a split one) or a URL of a folder laid out like one (or of a .gguf file).
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
      /** A .gguf file in the repository ("model-Q4_K_M.gguf", "Q8_0/model-Q8_0-00001-of-00002.gguf"). */
      file: z.string().min(1).max(1024).nullish(),
    }),
    z.strictObject({ type: z.literal('url'), url: HttpUrl }),
  ]),
});

/** Path parameter `{id}`: an HF-style "org/name", sent encoded (%2F) or not. */
export const BaseModelIdParam = z.object({ id: z.string().min(1) });
