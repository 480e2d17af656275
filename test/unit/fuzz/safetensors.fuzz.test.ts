// Mutation fuzzing of the safetensors reader (issue 10's standard: a hostile file gets a clear
// error, never a crash or an unbounded allocation): a small file of several dtypes, mutated byte by
// byte and field by field, and its JSON header mutated node by node with the length prefix kept
// right. Each mutant must open and read, or be refused with SafetensorsError; no read may fall
// outside the file.
import { describe, expect, it } from 'vitest';
import { SafetensorsError, SafetensorsFile, type ByteSource } from '../../../src/engine/model/files/safetensors';
import { writeSafetensors } from '../../../src/engine/model/files/safetensors-writer';
import type { TensorData } from '../../../src/engine/tensor/tensor-data';
import { expectParsesOrRefuses, mutateBytes, n, safetensorsHeaderMutants, SEED, splitSafetensors } from './mutate';

const tensor = (name: string, dtype: TensorData['dtype'], shape: number[], bytesPer: number): TensorData => ({
  name,
  dtype,
  shape,
  data: Uint8Array.from({ length: shape.reduce((a, b) => a * b, 1) * bytesPer }, (_, i) => (i * 37) & 255),
});
const SEED_FILE = writeSafetensors(
  [tensor('a.weight', 'f32', [3, 4], 4), tensor('b.weight', 'f16', [5], 2), tensor('c.bias', 'bf16', [2, 2, 2], 2)],
  { format: 'pt' },
);
const headerEnd = SEED_FILE.length - splitSafetensors(SEED_FILE).data.length;

/** A file in memory whose reads must stay inside it (an out-of-range read is a reader bug). */
function strictBytes(bytes: Uint8Array): ByteSource {
  return {
    size: bytes.length,
    read: async (begin, end) => {
      if (!(begin >= 0 && end >= begin && end <= bytes.length))
        throw new Error(`read [${begin}, ${end}) outside the ${bytes.length}-byte file`);
      return bytes.subarray(begin, end);
    },
  };
}

async function openAndRead(bytes: Uint8Array): Promise<void> {
  const file = await SafetensorsFile.open(strictBytes(bytes));
  for await (const t of file.tensors()) expect(t.data.length).toBeLessThanOrEqual(bytes.length);
}

describe('safetensors fuzzing', () => {
  it('the seed file opens', async () => {
    await openAndRead(SEED_FILE);
  });

  it('refuses byte-level mutants with SafetensorsError', async () => {
    const bounds = [0, 8, headerEnd, SEED_FILE.length - 8, SEED_FILE.length];
    const mutants = mutateBytes(SEED_FILE, n(300), SEED, { fields: [{ at: 0, width: 8 }], bounds });
    const { refused } = await expectParsesOrRefuses(mutants, openAndRead, [SafetensorsError]);
    expect(refused).toBeGreaterThan(mutants.length / 2);
  });

  it('refuses header mutants (dtype, shape, offsets, duplicates, nesting) with SafetensorsError', async () => {
    const mutants = safetensorsHeaderMutants(SEED_FILE, n(300), SEED + 1);
    const { parsed, refused } = await expectParsesOrRefuses(mutants, openAndRead, [SafetensorsError]);
    expect(refused).toBeGreaterThan(mutants.length / 2);
    expect(parsed).toBeGreaterThan(0); // e.g. __metadata__ changes
  });
});
