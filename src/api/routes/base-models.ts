/**
 * /v1/preview/base-models (Hearth extension, the Models view): list the base models Hearth
 * knows with their cache and download status; download one from a Hugging Face repository (or
 * mirror) or a URL in the background (202); upload picked files as one (multipart/form-data);
 * read one; remove a model's cached weights. Adding, uploading, re-pointing and removing are the
 * admin key's (403 for others): every principal lists and uses the same models. Ids are HF-style
 * "org/name": send them encoded (`org%2Fname`); the unencoded form matches too. A safetensors
 * model may be added to load quantized (`quantization`: "q8_0" or "q4_k", a JSON field, or a form
 * field of the upload).
 *
 * Uploads have a larger body limit than the app's 32 MiB (body-limits.ts) and are written to
 * storage as the body streams in (multipart-stream.ts, service/base-models/upload.ts).
 */
import { Hono } from 'hono';
import { listBaseModelInfo, requireBaseModelInfo, type BaseModelInfo } from '../../service/base-models/list';
import type { ServiceContext } from '../../service/context';
import { UnavailableError } from '../../service/errors';
import { requireJsonBody } from '../body-type';
import { adminOnly } from '../auth';
import type { AppEnv } from '../env';
import { formParts } from '../multipart';
import { BaseModelIdParam, DownloadBaseModelRequest } from '../schemas/base-models';
import { previewValidator } from '../validation';
import { iso } from '../views';

export const baseModels = new Hono<AppEnv>();

function downloads(services: ServiceContext) {
  if (!services.baseModels) throw new UnavailableError('This engine cannot add base models.');
  return services.baseModels;
}

export function baseModelView(m: BaseModelInfo) {
  return {
    id: m.id,
    object: 'base_model' as const,
    architecture: m.architecture,
    parameters: m.parameters,
    bytes: m.bytes,
    source: m.source,
    origin: m.origin,
    status: m.status,
    cached_bytes: m.cachedBytes,
    download: m.download && {
      loaded: m.download.loaded,
      total: m.download.total,
      bytes_per_second: m.download.bytesPerSecond,
      started_at: iso(m.download.startedAt),
      error: m.download.error,
    },
    default: m.default,
    description: m.description,
    loaded: m.loaded,
    max_model_len: m.maxModelLen,
    format: m.format,
    quantization: m.quantization,
    gpu_bytes: m.gpuBytes,
    warnings: m.warnings,
  };
}

baseModels.get('/', async (c) => {
  const data = (await listBaseModelInfo(c.get('deps').services)).map(baseModelView);
  return c.json({ object: 'list', data, has_more: false, first_id: data[0]?.id ?? '', last_id: data.at(-1)?.id ?? '' });
});

baseModels.post(
  '/',
  adminOnly('Adding or re-pointing a base model'),
  requireJsonBody(),
  previewValidator('json', DownloadBaseModelRequest),
  async (c) => {
    const services = c.get('deps').services;
    const body = c.req.valid('json');
    const { record, started } = await downloads(services).start(body.source, body.quantization);
    const entry = await requireBaseModelInfo(services, record.id);
    return c.json(baseModelView(entry), started || entry.status !== 'cached' ? 202 : 200);
  },
);

baseModels.post('/files', adminOnly('Uploading a base model'), async (c) => {
  const services = c.get('deps').services;
  const record = await downloads(services).addFiles(formParts(c));
  return c.json(baseModelView(await requireBaseModelInfo(services, record.id)), 201);
});

baseModels.get('/:id{.+}', previewValidator('param', BaseModelIdParam), async (c) => {
  return c.json(baseModelView(await requireBaseModelInfo(c.get('deps').services, c.req.valid('param').id)));
});

baseModels.delete('/:id{.+}', adminOnly('Removing a base model'), previewValidator('param', BaseModelIdParam), async (c) => {
  const id = c.req.valid('param').id;
  const { freedBytes } = await downloads(c.get('deps').services).remove(id);
  return c.json({ id, object: 'base_model', deleted: true, freed_bytes: freedBytes });
});
