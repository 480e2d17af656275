/**
 * Reading a multipart/form-data upload with the /v1/preview error rules: 415 for another content
 * type (body-type.ts, as for every body), 400 for a body that does not parse, 422 naming a
 * missing field. Small uploads (artifacts, PEFT adapters) are collected into text fields and
 * files; a base-model upload takes the parts as they stream (`formParts`).
 *
 * Not here: the parser (multipart-stream.ts), what the files must hold (the services check that).
 */
import type { Context } from 'hono';
import { HTTPException } from 'hono/http-exception';
import { InvalidInputError } from '../service/errors';
import { requireMediaType } from './body-type';
import type { AppEnv } from './env';
import { multipartBoundary, partBytes, partText, readMultipart, type FormPart } from './multipart-stream';

export interface Upload {
  fields: Map<string, string>;
  /** Every file part, whatever its field name, named by its file name. */
  files: { name: string; bytes: Uint8Array }[];
}

/** The parts of the request's form as they stream in: 415 unless it is multipart/form-data, 400 without a boundary. */
export function formParts(c: Context<AppEnv>): AsyncGenerator<FormPart> {
  requireMediaType(c, 'multipart/form-data');
  const boundary = multipartBoundary(c.req.header('Content-Type'));
  if (!boundary) throw new HTTPException(400, { message: 'The multipart body does not parse: its Content-Type names no boundary.' });
  const body = c.req.raw.body ?? new ReadableStream<Uint8Array>({ start: (controller) => controller.close() });
  return readMultipart(body, boundary);
}

/** Longest text field of a small upload (names and ids). */
const MAX_FIELD_BYTES = 64 * 1024;

/** A small upload (under the app's 32 MiB body cap) with every part read into memory. */
export async function readUpload(c: Context<AppEnv>): Promise<Upload> {
  const upload: Upload = { fields: new Map(), files: [] };
  for await (const part of formParts(c)) {
    if (part.filename === null) upload.fields.set(part.name, await partText(part, MAX_FIELD_BYTES));
    else upload.files.push({ name: part.filename.split(/[\\/]/).pop() || part.name, bytes: await partBytes(part) });
  }
  return upload;
}

/** A required text field; a 422 `missing` detail when absent or empty. */
export function requiredField(upload: Upload, name: string): string {
  const value = upload.fields.get(name);
  if (value === undefined || value === '') throw new InvalidInputError(['body', name], 'Field required', null, 'missing');
  return value;
}
