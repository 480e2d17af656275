/**
 * safetensors writer, byte-compatible with the Rust reference (`serialize` in
 * huggingface/safetensors `safetensors/src/tensor.rs`): tensors sorted by descending dtype
 * (F32 before BF16 before F16, the Rust enum order) then by name, compact JSON header with
 * `__metadata__` first, padded with spaces to a multiple of 8 so every tensor starts aligned.
 * Used by scripts/make-models, tests, and the trainer for PEFT `adapter_model.safetensors`.
 * Not here: reading (safetensors.ts).
 */
import type { FloatDType } from '../../tensor/dtype';
import { FILE_DTYPE } from './safetensors';
import { bytesPerElement, isBlockDType } from '../../tensor/dtype';
import { numel, type TensorData } from '../../tensor/tensor-data';

/** Position of each weight dtype in the Rust `Dtype` enum; larger sorts first. */
const DTYPE_RANK: Record<FloatDType, number> = { f16: 0, bf16: 1, f32: 2 };

/** The header and the data parts in file order; join them to get the file. */
export interface SafetensorsParts {
  header: Uint8Array;
  parts: Uint8Array[];
  byteLength: number;
}

export function safetensorsParts(tensors: readonly TensorData[], metadata?: Record<string, string>): SafetensorsParts {
  const seen = new Set<string>();
  for (const t of tensors) {
    if (seen.has(t.name)) throw new Error(`safetensors writer: duplicate tensor name "${t.name}"`);
    if (t.name === '__metadata__') throw new Error('safetensors writer: "__metadata__" is reserved');
    seen.add(t.name);
    if (isBlockDType(t.dtype))
      throw new Error(`safetensors writer: tensor "${t.name}" is ${t.dtype}, a GGML block type safetensors cannot hold`);
    const expected = numel(t.shape) * bytesPerElement(t.dtype);
    if (t.data.byteLength !== expected) {
      throw new Error(
        `safetensors writer: tensor "${t.name}" of shape [${t.shape.join(', ')}] ${t.dtype} needs ${expected} bytes, got ${t.data.byteLength}`,
      );
    }
  }
  const sorted = [...(tensors as ReadonlyArray<TensorData & { dtype: FloatDType }>)].sort(
    (a, b) => DTYPE_RANK[b.dtype] - DTYPE_RANK[a.dtype] || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0),
  );
  const header: Record<string, unknown> = {};
  if (metadata) header.__metadata__ = metadata;
  let offset = 0;
  for (const t of sorted) {
    const end = offset + t.data.byteLength;
    header[t.name] = { dtype: FILE_DTYPE[t.dtype], shape: t.shape, data_offsets: [offset, end] };
    offset = end;
  }
  const json = new TextEncoder().encode(JSON.stringify(header));
  const padded = Math.ceil(json.byteLength / 8) * 8;
  const head = new Uint8Array(8 + padded).fill(0x20, 8 + json.byteLength);
  new DataView(head.buffer).setBigUint64(0, BigInt(padded), true);
  head.set(json, 8);
  return { header: head, parts: sorted.map((t) => t.data), byteLength: head.byteLength + offset };
}

/** The whole file as one byte array (small files: adapters, tests, the bundled models). */
export function writeSafetensors(tensors: readonly TensorData[], metadata?: Record<string, string>): Uint8Array {
  const { header, parts, byteLength } = safetensorsParts(tensors, metadata);
  const out = new Uint8Array(byteLength);
  out.set(header, 0);
  let at = header.byteLength;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}

/** The file as a Blob assembled from the tensors' own buffers, without one big copy. */
export function safetensorsBlob(tensors: readonly TensorData[], metadata?: Record<string, string>): Blob {
  const { header, parts } = safetensorsParts(tensors, metadata);
  return new Blob([header, ...parts] as BlobPart[], { type: 'application/octet-stream' });
}
