/**
 * Reading a multipart/form-data upload (artifacts, PEFT adapters) into text fields and files,
 * with the /v1/preview error rules: 415 for another content type (body-type.ts, as for every
 * body), 400 for a body that does not parse, 422 naming a missing field.
 *
 * Not here: what the files must hold (the services check that).
 */
import type { Context } from 'hono';
import { HTTPException } from 'hono/http-exception';
import { InvalidInputError } from '../service/errors';
import { requireMediaType } from './body-type';
import type { AppEnv } from './env';

export interface Upload {
  fields: Map<string, string>;
  /** Every file part, whatever its field name, named by its file name. */
  files: { name: string; bytes: Uint8Array }[];
}

/** The request's form: 415 unless it is multipart/form-data, 400 when it does not parse. */
export async function readForm(c: Context<AppEnv>): Promise<FormData> {
  requireMediaType(c, 'multipart/form-data');
  try {
    return await c.req.formData();
  } catch (err) {
    throw new HTTPException(400, { message: `The multipart body does not parse: ${(err as Error).message}` });
  }
}

export async function readUpload(c: Context<AppEnv>): Promise<Upload> {
  const form = await readForm(c);
  const upload: Upload = { fields: new Map(), files: [] };
  for (const [key, value] of form.entries()) {
    if (typeof value === 'string') upload.fields.set(key, value);
    else upload.files.push({ name: value.name.split(/[\\/]/).pop() || key, bytes: new Uint8Array(await value.arrayBuffer()) });
  }
  return upload;
}

/** A required text field; a 422 `missing` detail when absent or empty. */
export function requiredField(upload: Upload, name: string): string {
  const value = upload.fields.get(name);
  if (value === undefined || value === '') throw new InvalidInputError(['body', name], 'Field required', null, 'missing');
  return value;
}
