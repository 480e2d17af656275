/**
 * GGML tensor types as GGUF files number them: the block layout each one stores (elements per
 * block, bytes per block) and which of them Hearth reads. The ids and sizes are ggml's
 * (ggml/include/ggml.h `enum ggml_type`, ggml/src/ggml-common.h `block_*` structs); removed ids
 * (4, 5, 31-33) stay unknown.
 *
 * Not here: reading a file (model/gguf/gguf-reader.ts), what the blocks mean (model/quant/dequant.ts).
 */

export interface GgmlType {
  id: number;
  name: string;
  /** Elements per block (1 for plain float types). */
  blockSize: number;
  /** Bytes per block. */
  typeSize: number;
}

/** The K-quants' super-block: 256 elements (ggml's QK_K). */
export const QK_K = 256;

const TYPES: readonly GgmlType[] = [
  { id: 0, name: 'F32', blockSize: 1, typeSize: 4 },
  { id: 1, name: 'F16', blockSize: 1, typeSize: 2 },
  { id: 2, name: 'Q4_0', blockSize: 32, typeSize: 18 }, // f16 d, 16 B of nibbles
  { id: 3, name: 'Q4_1', blockSize: 32, typeSize: 20 }, // f16 d, f16 m, 16 B of nibbles
  { id: 6, name: 'Q5_0', blockSize: 32, typeSize: 22 }, // f16 d, 4 B high bits, 16 B of nibbles
  { id: 7, name: 'Q5_1', blockSize: 32, typeSize: 24 }, // f16 d, f16 m, 4 B high bits, 16 B
  { id: 8, name: 'Q8_0', blockSize: 32, typeSize: 34 }, // f16 d, 32 i8
  { id: 9, name: 'Q8_1', blockSize: 32, typeSize: 36 },
  { id: 10, name: 'Q2_K', blockSize: QK_K, typeSize: 84 }, // 16 B scales, 64 B quants, f16 d, f16 dmin
  { id: 11, name: 'Q3_K', blockSize: QK_K, typeSize: 110 }, // 32 B hmask, 64 B quants, 12 B scales, f16 d
  { id: 12, name: 'Q4_K', blockSize: QK_K, typeSize: 144 }, // f16 d, f16 dmin, 12 B scales, 128 B quants
  { id: 13, name: 'Q5_K', blockSize: QK_K, typeSize: 176 }, // f16 d, f16 dmin, 12 B scales, 32 B qh, 128 B
  { id: 14, name: 'Q6_K', blockSize: QK_K, typeSize: 210 }, // 128 B ql, 64 B qh, 16 i8 scales, f16 d
  { id: 15, name: 'Q8_K', blockSize: QK_K, typeSize: 292 },
  { id: 16, name: 'IQ2_XXS', blockSize: QK_K, typeSize: 66 },
  { id: 17, name: 'IQ2_XS', blockSize: QK_K, typeSize: 74 },
  { id: 18, name: 'IQ3_XXS', blockSize: QK_K, typeSize: 98 },
  { id: 19, name: 'IQ1_S', blockSize: QK_K, typeSize: 50 },
  { id: 20, name: 'IQ4_NL', blockSize: 32, typeSize: 18 },
  { id: 21, name: 'IQ3_S', blockSize: QK_K, typeSize: 110 },
  { id: 22, name: 'IQ2_S', blockSize: QK_K, typeSize: 82 },
  { id: 23, name: 'IQ4_XS', blockSize: QK_K, typeSize: 136 },
  { id: 24, name: 'I8', blockSize: 1, typeSize: 1 },
  { id: 25, name: 'I16', blockSize: 1, typeSize: 2 },
  { id: 26, name: 'I32', blockSize: 1, typeSize: 4 },
  { id: 27, name: 'I64', blockSize: 1, typeSize: 8 },
  { id: 28, name: 'F64', blockSize: 1, typeSize: 8 },
  { id: 29, name: 'IQ1_M', blockSize: QK_K, typeSize: 56 },
  { id: 30, name: 'BF16', blockSize: 1, typeSize: 2 },
  { id: 34, name: 'TQ1_0', blockSize: QK_K, typeSize: 54 },
  { id: 35, name: 'TQ2_0', blockSize: QK_K, typeSize: 66 },
  { id: 39, name: 'MXFP4', blockSize: 32, typeSize: 17 },
];

export const GGML_TYPES: ReadonlyMap<number, GgmlType> = new Map(TYPES.map((t) => [t.id, t]));
export const GGML_TYPE_BY_NAME: ReadonlyMap<string, GgmlType> = new Map(TYPES.map((t) => [t.name, t]));

/** The types Hearth reads as weights: the plain floats and the common llama.cpp quantizations. */
export const SUPPORTED_GGML_TYPES: ReadonlySet<string> = new Set([
  'F32',
  'F16',
  'BF16',
  'Q8_0',
  'Q4_0',
  'Q4_1',
  'Q5_0',
  'Q5_1',
  'Q2_K',
  'Q3_K',
  'Q4_K',
  'Q5_K',
  'Q6_K',
]);

export function ggmlType(name: string): GgmlType {
  const t = GGML_TYPE_BY_NAME.get(name);
  if (!t) throw new Error(`unknown GGML type ${name}`);
  return t;
}

/** Bytes of a tensor of `elements` elements of type `t` (elements must be whole blocks). */
export function ggmlBytes(t: GgmlType, elements: number): number {
  if (elements % t.blockSize !== 0) throw new Error(`${t.name}: ${elements} elements are not whole blocks of ${t.blockSize}`);
  return (elements / t.blockSize) * t.typeSize;
}
