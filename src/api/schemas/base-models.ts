/**
 * Body of POST /v1/preview/base-models: where to download a base model from, a Hugging Face
 * repository (optionally a revision and a mirror's base URL; with `file`, one GGUF file of it, or
 * any part of a split one) or a URL of a folder laid out like one (or of a .gguf file); and, for a
 * safetensors model, whether it loads quantized.
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
  /**
   * Hearth extension: load a safetensors model's matrices as Q8_0 or Q4_K blocks (its files are
   * kept as they are; quantizing happens as it loads). null: the file's precision. Absent: the
   * model's current choice (file precision for a new one). A GGUF keeps its own blocks (422).
   */
  quantization: z.enum(['q8_0', 'q4_k']).nullish(),
});

/** Path parameter `{id}`: an HF-style "org/name", sent encoded (%2F) or not. */
export const BaseModelIdParam = z.object({ id: z.string().min(1) });
