/**
 * /v1/preview/base-models (Hearth extension, the Models view): list the base models Hearth
 * knows with their cache and download status; download one from a Hugging Face repository (or
 * mirror) or a URL in the background (202); upload picked files as one (multipart/form-data);
 * read one; remove a model's cached weights. Ids are HF-style "org/name": send them encoded
 * (`org%2Fname`); the unencoded form matches too.
 *
 * Uploads are exempt from the app's 32 MiB body limit (app.ts) and have their own, below.
 */
import { Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import type { PickedFile } from '../../engine/model/sources/files-source';
import { listBaseModelInfo, requireBaseModelInfo, type BaseModelInfo } from '../../service/base-model-list';
import type { ServiceContext } from '../../service/context';
import { InvalidInputError, UnavailableError } from '../../service/errors';
import { requireJsonBody } from '../body-type';
import type { AppEnv } from '../env';
import { errorResponse } from '../errors';
import { readForm } from '../multipart';
import { BaseModelIdParam, DownloadBaseModelRequest } from '../schemas/base-models';
import { previewValidator } from '../validation';
import { iso } from '../views';

/** The path uploads come to (exempt from the app-wide body limit). */
export const BASE_MODEL_FILES_PATH = '/v1/preview/base-models/files';
/** Largest upload: the body crosses from the Service Worker to the engine as one ArrayBuffer. */
export const MAX_UPLOAD_BYTES = 2 * 1024 * 1024 * 1024;

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
    loaded: m.loaded,
    max_model_len: m.maxModelLen,
  };
}

baseModels.get('/', async (c) => {
  const data = (await listBaseModelInfo(c.get('deps').services)).map(baseModelView);
  return c.json({ object: 'list', data, has_more: false, first_id: data[0]?.id ?? '', last_id: data.at(-1)?.id ?? '' });
});

baseModels.post('/', requireJsonBody(), previewValidator('json', DownloadBaseModelRequest), async (c) => {
  const services = c.get('deps').services;
  const { record, started } = await downloads(services).start(c.req.valid('json').source);
  const entry = await requireBaseModelInfo(services, record.id);
  return c.json(baseModelView(entry), started || entry.status !== 'cached' ? 202 : 200);
});

baseModels.post(
  '/files',
  bodyLimit({
    maxSize: MAX_UPLOAD_BYTES,
    onError: (c) => errorResponse(c, 413, `The upload is larger than ${MAX_UPLOAD_BYTES} bytes: load a model this large from a URL instead.`),
  }),
  async (c) => {
    const services = c.get('deps').services;
    const form = await readForm(c);
    const files: PickedFile[] = [];
    let id: string | undefined;
    for (const [name, value] of form.entries()) {
      if (typeof value === 'string') {
        if (name === 'id' && value !== '') id = value;
      } else {
        files.push(value);
      }
    }
    if (files.length === 0) throw new InvalidInputError(['body', 'files'], 'No files were sent.', null, 'missing');
    const record = await downloads(services).addFiles(files, id);
    return c.json(baseModelView(await requireBaseModelInfo(services, record.id)), 201);
  },
);

baseModels.get('/:id{.+}', previewValidator('param', BaseModelIdParam), async (c) => {
  return c.json(baseModelView(await requireBaseModelInfo(c.get('deps').services, c.req.valid('param').id)));
});

baseModels.delete('/:id{.+}', previewValidator('param', BaseModelIdParam), async (c) => {
  const id = c.req.valid('param').id;
  const { freedBytes } = await downloads(c.get('deps').services).remove(id);
  return c.json({ id, object: 'base_model', deleted: true, freed_bytes: freedBytes });
});
