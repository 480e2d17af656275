/**
 * Uploaded SFT data artifacts: Hearth's stand-in for the W&B artifact store that ART's SFT
 * client uploads to before creating a job (docs/reference/art-compat.md §4). An upload holds either a single
 * `train.jsonl` (what ART writes) or `trajectories.jsonl` with an optional `metadata.json` (what
 * the specification names); every line is checked as SFT data at upload time. It belongs to the
 * caller and to one of their models, is deleted with that model, and answers to a URL,
 * `{origin}/v1/preview/artifacts/{id}`, that `training_data_url` accepts: the service resolves
 * it from IndexedDB, without fetching.
 *
 * Not here: HTTP parsing (api/routes/artifacts.ts), SFT line checks (training/sft-data.ts).
 */
import { getArtifact, insertArtifact } from '../store/artifacts';
import type { ArtifactFile, ArtifactRecord } from '../store/schema';
import type { Principal } from './principal';
import type { ServiceContext } from './context';
import { InvalidInputError, NotFoundError } from './errors';
import { newId } from './ids';
import { requireModel } from './models';
import { MAX_TRAINING_DATA_BYTES, parseSftJsonl } from './training/sft-data';

const FILES_LOC = ['body', 'files'];
const ARTIFACT_PATH = /^\/v1\/preview\/artifacts\/([0-9a-f-]{36})\/?$/i;

export interface UploadedFile {
  name: string;
  bytes: Uint8Array;
}

export interface UploadArtifact {
  modelId: string;
  /** Optional display name; defaults to the data file's name. */
  name?: string;
  files: UploadedFile[];
}

/** The URL `training_data_url` takes for an artifact. */
export function artifactUrl(ctx: ServiceContext, id: string): string {
  return new URL(`/v1/preview/artifacts/${id}`, ctx.baseUrl).href;
}

/** The artifact id an app URL names (absolute on this origin, or relative), or null. */
export function artifactIdOf(ctx: ServiceContext, rawUrl: string): string | null {
  let url: URL;
  try {
    url = new URL(rawUrl, ctx.baseUrl);
  } catch {
    return null;
  }
  if (url.origin !== new URL(ctx.baseUrl).origin) return null;
  return ARTIFACT_PATH.exec(url.pathname)?.[1]?.toLowerCase() ?? null;
}

/** The JSONL data file of an artifact: train.jsonl, trajectories.jsonl or any other *.jsonl. */
export function dataFile(artifact: ArtifactRecord): ArtifactFile {
  const file = artifact.files.find((f) => f.name.endsWith('.jsonl')) ?? artifact.files[0];
  if (!file) throw new Error(`Artifact ${artifact.id} holds no data file.`);
  return file;
}

function bad(message: string, input: unknown = null): InvalidInputError {
  return new InvalidInputError(FILES_LOC, message, input);
}

/** Checks and stores an upload; 422 naming the problem, 404 for a model that is not the caller's. */
export async function uploadArtifact(ctx: ServiceContext, caller: Principal, req: UploadArtifact): Promise<ArtifactRecord> {
  await requireModel(ctx, caller, req.modelId);
  const names = req.files.map((f) => f.name);
  if (new Set(names).size !== names.length) throw bad(`Each file may be uploaded once; got ${names.join(', ')}.`, names);
  const data = req.files.filter((f) => f.name.endsWith('.jsonl'));
  const extra = req.files.filter((f) => !f.name.endsWith('.jsonl') && f.name !== 'metadata.json');
  if (data.length !== 1 || extra.length > 0) {
    throw bad(
      'Upload one JSONL data file (train.jsonl, or trajectories.jsonl) and optionally metadata.json; ' +
        `got ${names.length ? names.join(', ') : 'no files'}.`,
      names,
    );
  }
  const total = req.files.reduce((n, f) => n + f.bytes.byteLength, 0);
  if (total > MAX_TRAINING_DATA_BYTES) throw bad(`The artifact is larger than ${MAX_TRAINING_DATA_BYTES / 2 ** 20} MiB.`);
  let examples;
  try {
    examples = parseSftJsonl(data[0].bytes);
  } catch (err) {
    if (err instanceof InvalidInputError) throw bad(`${data[0].name}: ${err.message}`, err.input);
    throw err;
  }
  const metadata = req.files.find((f) => f.name === 'metadata.json');
  if (metadata) checkMetadata(metadata.bytes, examples.length);

  const artifact: ArtifactRecord = {
    id: newId(),
    principalId: caller.id,
    modelId: req.modelId,
    kind: 'sft-data',
    name: req.name ?? data[0].name,
    sourceUrl: 'upload',
    files: req.files.map((f) => ({ name: f.name, bytes: f.bytes.slice().buffer })),
    createdAt: ctx.now(),
  };
  await insertArtifact(ctx.db, artifact);
  return artifact;
}

/** metadata.json: a JSON object; its num_trajectories, when given, must count the data's lines. */
function checkMetadata(bytes: Uint8Array, lines: number): void {
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder().decode(bytes));
  } catch (err) {
    throw bad(`metadata.json is not valid JSON (${(err as Error).message}).`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw bad('metadata.json must be a JSON object.', value);
  const n = (value as Record<string, unknown>).num_trajectories;
  if (n !== undefined && n !== lines) {
    throw bad(`metadata.json says num_trajectories is ${JSON.stringify(n)}, but the data holds ${lines} examples.`, n);
  }
}

export async function requireArtifact(ctx: ServiceContext, caller: Principal, id: string): Promise<ArtifactRecord> {
  const artifact = await getArtifact(ctx.db, caller.id, id);
  if (!artifact) throw new NotFoundError(`Artifact ${id} not found.`);
  return artifact;
}

/**
 * The caller's artifact behind an artifact URL, for an SFT job on `modelId`; 422 on
 * `training_data_url` when it does not exist or belongs to another model.
 */
export async function artifactForJob(ctx: ServiceContext, caller: Principal, id: string, modelId: string): Promise<ArtifactRecord> {
  const artifact = await getArtifact(ctx.db, caller.id, id);
  const loc = ['body', 'training_data_url'];
  if (!artifact) throw new InvalidInputError(loc, `training_data_url names artifact ${id}, which does not exist (or is not yours).`, id);
  if (artifact.modelId !== modelId) {
    throw new InvalidInputError(
      loc,
      `Artifact ${id} was uploaded for model ${artifact.modelId}, not ${modelId}; upload the data for this model.`,
      id,
    );
  }
  return artifact;
}
