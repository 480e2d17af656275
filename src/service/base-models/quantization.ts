/**
 * Quantize on load for added base models (issue 11): how a request's `quantization` ("q8_0",
 * "q4_k", null) is checked and kept in a base-model record, and the load format a record says.
 * The record keeps the choice (`quantizeOnLoad`), so every later load, after a reload too, makes
 * the same blocks; `quantization` shows it by its GGML name ("Q4_K"), as for a GGUF.
 *
 * Not here: quantizing (engine/model/quant/quantize-on-load.ts), the downloads themselves
 * (downloads.ts).
 */
import { SAFETENSORS, type ModelFormat } from '../../engine/model/files/model-repository';
import { QUANTIZE_TARGETS, type QuantizeTarget } from '../../engine/tensor/dtype';
import type { BaseModelRecord } from '../../store/schema';
import { ConflictError, InvalidInputError } from '../errors';

/**
 * How a safetensors model's weights load: Q8_0 or Q4_K blocks, or null for the file's precision;
 * undefined keeps what the model's record says (file precision for a new one).
 */
export type LoadQuantization = QuantizeTarget | null | undefined;

const LOC = ['body', 'quantization'];
const GGUF_KEEPS_BLOCKS = 'A GGUF model keeps the blocks of its file: quantization applies to safetensors models only.';

/** The weights' format a record says (records from before GGUF are safetensors). */
export function formatOf(r: Pick<BaseModelRecord, 'format' | 'ggufFiles' | 'quantizeOnLoad'>): ModelFormat {
  if (r.format === 'gguf' && r.ggufFiles) return { type: 'gguf', files: r.ggufFiles };
  return r.quantizeOnLoad ? { type: 'safetensors', quantize: r.quantizeOnLoad } : SAFETENSORS;
}

/** The record's fields for a safetensors model loaded as `q`. */
export function quantizedOnLoad(q: QuantizeTarget | null): Pick<BaseModelRecord, 'quantizeOnLoad' | 'quantization'> {
  return q ? { quantizeOnLoad: q, quantization: q.toUpperCase() } : { quantizeOnLoad: undefined, quantization: null };
}

/**
 * A download request's choice against what it downloads: 422 for a GGUF, 409 for a model known
 * in another format (a record in error is added anew, so it takes any).
 */
export function checkDownloadQuantization(q: LoadQuantization, id: string, gguf: boolean, existing: BaseModelRecord | undefined): void {
  if (gguf && q) throw new InvalidInputError(LOC, GGUF_KEEPS_BLOCKS, q);
  if (!existing || existing.status === 'error' || q === undefined || (existing.quantizeOnLoad ?? null) === q) return;
  const was = existing.quantizeOnLoad?.toUpperCase() ?? 'file precision';
  throw new ConflictError(`${id} was added to load as ${was}: remove it first to add it in another format.`);
}

/** An upload's `quantization` form field: "q8_0", "q4_k" or "none" (absent: none); 422 otherwise or for GGUF files. */
export function uploadQuantization(field: string | undefined, gguf: boolean): QuantizeTarget | null {
  if (field === undefined || field === 'none') return null;
  if (!(QUANTIZE_TARGETS as readonly string[]).includes(field)) {
    // The message and type of the JSON route's zod check (api/validation.ts), for the same field.
    const expected = "'q8_0', 'q4_k' or 'none'";
    throw new InvalidInputError(LOC, `Input should be ${expected}`, field, 'literal_error', { expected });
  }
  if (gguf) throw new InvalidInputError(LOC, GGUF_KEEPS_BLOCKS, field);
  return field as QuantizeTarget;
}
