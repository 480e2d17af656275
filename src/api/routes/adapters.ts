/**
 * PEFT adapters over HTTP, mounted under /v1/preview/models:
 * - GET /{model_id}/checkpoints/{step}/adapter: the checkpoint as `application/zip` holding
 *   adapter_config.json and adapter_model.safetensors (step 0: the identity adapter), or with
 *   `?format=gguf` as one GGUF LoRA adapter file for llama.cpp's `--lora` (issue 11);
 * - POST /import (multipart/form-data: `project`, `name`, `base_model`, optional `entity`, and
 *   the files adapter_config.json + adapter_model.safetensors, or one zip of them): registers a
 *   new model whose step 1 is the uploaded adapter. Answers the model like POST /models.
 *
 * Reference: PEFT `save_pretrained` / `from_pretrained` file layout; docs/reference/art-compat.md §1.2, §5.
 */
import { Hono } from 'hono';
import { z } from 'zod';
import { checkpointAdapterZip, importAdapterModel } from '../../service/adapters/archive';
import { checkpointAdapterGguf } from '../../service/adapters/gguf';
import type { AppEnv } from '../env';
import { validationResponse } from '../errors';
import { readUpload } from '../multipart';
import { Name, queryInt } from '../schemas/common';
import { issuesToDetails, previewValidator } from '../validation';
import { modelView } from '../views';

export const adapters = new Hono<AppEnv>();

/** The text fields of an import, checked like POST /models' body. */
const ImportFields = z.object({ entity: Name.nullish(), project: Name, name: Name, base_model: z.string().min(1) });

const StepParam = z.object({ id: z.string().min(1), step: queryInt(0, Number.MAX_SAFE_INTEGER, 0) });
/** `peft` (default): the PEFT zip; `gguf`: a GGUF LoRA adapter. */
const AdapterQuery = z.object({ format: z.enum(['peft', 'gguf']).default('peft') });

adapters.get('/:id/checkpoints/:step/adapter', previewValidator('param', StepParam), previewValidator('query', AdapterQuery), async (c) => {
  const { id, step } = c.req.valid('param');
  const gguf = c.req.valid('query').format === 'gguf';
  const zip = await (gguf ? checkpointAdapterGguf : checkpointAdapterZip)(c.get('deps').services, c.get('principal'), id, step);
  return c.body(zip.bytes.slice().buffer, 200, {
    'Content-Type': gguf ? 'application/octet-stream' : 'application/zip',
    'Content-Disposition': `attachment; filename="${zip.fileName.replace(/"/g, '')}"`,
  });
});

adapters.post('/import', async (c) => {
  const upload = await readUpload(c);
  const raw = Object.fromEntries(upload.fields);
  const fields = ImportFields.safeParse(raw);
  if (!fields.success) return validationResponse(c, issuesToDetails(fields.error.issues, raw, 'body'));
  const model = await importAdapterModel(c.get('deps').services, c.get('principal'), { ...fields.data, files: upload.files });
  return c.json(modelView(model));
});
