/**
 * /v1/preview/artifacts: uploading SFT training data (multipart/form-data: `model_id`, optional
 * `name`, and the files: `train.jsonl`, or `trajectories.jsonl` + optional `metadata.json`) and
 * reading an upload's description. The `url` of the answer is what an SFT job's
 * `training_data_url` takes.
 *
 * Reference: specification "SFT job creation body" (training_data_url); docs/reference/art-compat.md §4.
 */
import { Hono } from 'hono';
import { artifactUrl, requireArtifact, uploadArtifact } from '../../service/artifacts';
import type { ServiceContext } from '../../service/context';
import type { ArtifactRecord } from '../../store/schema';
import type { AppEnv } from '../env';
import { readUpload, requiredField } from '../multipart';
import { IdParam } from '../schemas/common';
import { previewValidator } from '../validation';
import { iso } from '../views';

export const artifacts = new Hono<AppEnv>();

function artifactView(ctx: ServiceContext, a: ArtifactRecord) {
  return {
    id: a.id,
    object: 'artifact' as const,
    model_id: a.modelId,
    name: a.name,
    url: artifactUrl(ctx, a.id),
    files: a.files.map((f) => ({ name: f.name, bytes: f.bytes.byteLength })),
    created_at: iso(a.createdAt),
  };
}

artifacts.post('/', async (c) => {
  const upload = await readUpload(c);
  const services = c.get('deps').services;
  const artifact = await uploadArtifact(services, c.get('principal'), {
    modelId: requiredField(upload, 'model_id'),
    name: upload.fields.get('name') || undefined,
    files: upload.files,
  });
  return c.json(artifactView(services, artifact));
});

artifacts.get('/:id', previewValidator('param', IdParam), async (c) => {
  const services = c.get('deps').services;
  return c.json(artifactView(services, await requireArtifact(services, c.get('principal'), c.req.valid('param').id)));
});
