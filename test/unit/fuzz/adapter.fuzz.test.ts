// Mutation fuzzing of PEFT adapter uploads (issue 10, items 2 and 3's standard): a real adapter for a
// small Qwen3 (adapter_config.json and adapter_model.safetensors as Hearth exports them) zipped, then
// the zip mutated byte by byte and in every size/count/offset field of its local headers, central
// directory and end record; the config mutated node by node (r, lora_alpha, target_modules as
// hostile regexes, ...); the safetensors file mutated in its header and bytes. Each mutant runs what
// the import route runs before it stores anything (adapterFromUpload, then checkAdapterFiles): it is
// accepted, or refused with the error the route turns into a 422 naming the problem (InvalidInputError
// from the zip; AdapterError, SafetensorsError, JSON's SyntaxError or the LoRA plan's plain Error).
import { zipSync } from 'fflate';
import { describe, expect, it } from 'vitest';
import { SafetensorsError } from '../../../src/engine/model/files/safetensors';
import { Rng } from '../../../src/engine/tensor/random';
import { testConfig } from '../../../src/engine/reference/random-model';
import { loraToTensors, planLora } from '../../../src/engine/train/lora-plan';
import { AdapterError } from '../../../src/service/adapters/parse';
import { InvalidInputError } from '../../../src/service/errors';
import { checkAdapterFiles } from '../../../src/service/adapters/archive';
import { adapterFiles } from '../../../src/service/adapters/peft-files';
import { adapterFromUpload } from '../../../src/service/adapters/upload';
import { expectParsesOrRefuses, mutateBytes, mutateJson, n, safetensorsHeaderMutants, SEED, type ErrorClass } from './mutate';

const config = testConfig('qwen3', { hiddenSize: 32, numHeads: 2, numKvHeads: 1, headDim: 16, intermediateSize: 64, numLayers: 2 });
const lora = { rank: 4, alpha: 8, targetModules: ['q_proj', 'v_proj', 'down_proj'], useRslora: false };
const plan = planLora(config, lora);
const seedFiles = adapterFiles('tiny/qwen3', lora, loraToTensors(plan, new Rng(SEED).uniforms(plan.elements)));
const SEED_ZIP = zipSync(
  { 'run/adapter_config.json': seedFiles.adapterConfig, 'run/adapter_model.safetensors': seedFiles.adapterModel },
  { level: 6 },
);
const REFUSALS: ErrorClass[] = [InvalidInputError, AdapterError, SafetensorsError, SyntaxError, Error];

async function upload(files: { name: string; bytes: Uint8Array }[]): Promise<void> {
  const checked = await checkAdapterFiles(config, adapterFromUpload(files));
  expect(checked.rank).toBeGreaterThan(0);
}
const zipUpload = (bytes: Uint8Array) => upload([{ name: 'adapter.zip', bytes }]);
const pair = (adapterConfig: Uint8Array, adapterModel: Uint8Array) =>
  upload([
    { name: 'adapter_config.json', bytes: adapterConfig },
    { name: 'adapter_model.safetensors', bytes: adapterModel },
  ]);

/** The zip's 4-byte size and offset fields (APPNOTE 4.3.7, 4.3.12, 4.3.16) and where each record starts. */
function zipStructure(bytes: Uint8Array): { fields: Array<{ at: number; width: 4 }>; bounds: number[] } {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const fields: Array<{ at: number; width: 4 }> = [];
  const bounds: number[] = [];
  for (let i = 0; i + 4 <= bytes.length; i++) {
    const sig = view.getUint32(i, true);
    // Local header: compressed and uncompressed size; central entry: the same and the local header's
    // offset; end record: the directory's size and offset.
    if (sig === 0x04034b50) fields.push({ at: i + 18, width: 4 }, { at: i + 22, width: 4 });
    else if (sig === 0x02014b50) fields.push({ at: i + 20, width: 4 }, { at: i + 24, width: 4 }, { at: i + 42, width: 4 });
    else if (sig === 0x06054b50) fields.push({ at: i + 12, width: 4 }, { at: i + 16, width: 4 });
    else continue;
    bounds.push(i, i + 30);
  }
  return { fields, bounds };
}

describe('adapter upload fuzzing', () => {
  it('the seed adapter is accepted, zipped and as two files', async () => {
    await zipUpload(SEED_ZIP);
    await pair(seedFiles.adapterConfig, seedFiles.adapterModel);
  });

  it('refuses zip mutants (sizes, offsets, counts, bytes) with a 422', async () => {
    const mutants = mutateBytes(SEED_ZIP, n(250), SEED, zipStructure(SEED_ZIP));
    const { refused } = await expectParsesOrRefuses(mutants, zipUpload, REFUSALS);
    expect(refused).toBeGreaterThan(mutants.length / 2);
  });

  it('refuses adapter_config.json mutants with a 422', async () => {
    const text = new TextDecoder().decode(seedFiles.adapterConfig);
    const mutants = mutateJson(text, n(200), SEED + 1);
    // Hostile target_modules patterns: regex bombs (with bounded quantifiers too, issue 26), invalid syntax, lookbehinds.
    for (const p of [
      '(.|.|.|.)*X',
      '(a+)+$',
      '((q_proj)*)*',
      '[',
      '.*'.repeat(200),
      '(?<=a)q_proj',
      '.{0,999}'.repeat(12) + 'x',
      '(?:q|.)'.repeat(20) + 'X',
    ]) {
      mutants.push({ what: `target_modules ${p}`, value: JSON.stringify({ ...JSON.parse(text), target_modules: p }) });
    }
    const { refused } = await expectParsesOrRefuses(mutants, (t) => pair(new TextEncoder().encode(t), seedFiles.adapterModel), REFUSALS);
    expect(refused).toBeGreaterThan(mutants.length / 4);
  });

  it('refuses adapter_model.safetensors mutants with a 422', async () => {
    const model = seedFiles.adapterModel;
    const mutants = [
      ...safetensorsHeaderMutants(model, n(150), SEED + 2),
      ...mutateBytes(model, n(100), SEED + 3, { fields: [{ at: 0, width: 8 }] }),
    ];
    const { refused } = await expectParsesOrRefuses(mutants, (m) => pair(seedFiles.adapterConfig, m), REFUSALS);
    expect(refused).toBeGreaterThan(mutants.length / 2);
  });
});
