/**
 * What a GGUF file's quantization is called: llama.cpp's name for its `general.file_type`
 * (include/llama.h `enum llama_ftype`: 15 is Q4_K_M, a mix of Q4_K and Q6_K tensors), or, for a
 * file without the key, the GGML type holding most of its tensor bytes. Shown in the Models view
 * and stored with the base model.
 *
 * Not here: reading the file (gguf/gguf-reader.ts), the block formats.
 */
import { ggufValue, type GgufFile } from './gguf-reader';

/** llama_ftype values ("MOSTLY_" dropped); removed ids (4-6, 33-35) stay unnamed. */
const FILE_TYPES: Readonly<Record<number, string>> = {
  0: 'F32',
  1: 'F16',
  2: 'Q4_0',
  3: 'Q4_1',
  7: 'Q8_0',
  8: 'Q5_0',
  9: 'Q5_1',
  10: 'Q2_K',
  11: 'Q3_K_S',
  12: 'Q3_K_M',
  13: 'Q3_K_L',
  14: 'Q4_K_S',
  15: 'Q4_K_M',
  16: 'Q5_K_S',
  17: 'Q5_K_M',
  18: 'Q6_K',
  19: 'IQ2_XXS',
  20: 'IQ2_XS',
  21: 'Q2_K_S',
  22: 'IQ3_XS',
  23: 'IQ3_XXS',
  24: 'IQ1_S',
  25: 'IQ4_NL',
  26: 'IQ3_S',
  27: 'IQ3_M',
  28: 'IQ2_S',
  29: 'IQ2_M',
  30: 'IQ4_XS',
  31: 'IQ1_M',
  32: 'BF16',
  36: 'TQ1_0',
  37: 'TQ2_0',
};

export function ggufQuantization(file: GgufFile): string {
  const ftype = ggufValue(file, 'general.file_type');
  if (typeof ftype === 'number' && FILE_TYPES[ftype]) return FILE_TYPES[ftype];
  const bytes = new Map<string, number>();
  for (const t of file.tensors) bytes.set(t.type.name, (bytes.get(t.type.name) ?? 0) + t.end - t.begin);
  return [...bytes].sort((a, b) => b[1] - a[1])[0]?.[0] ?? 'unknown';
}
