/**
 * Writes the Gemma 3 golden checkpoint (test/unit/model/gemma3-golden.ts: gemma-3-270m's per-layer
 * shape, seeded bf16 weights) as a Hugging Face folder, with a PEFT adapter beside it (one SFT step
 * of Hearth's reference trainer, exported as a job's checkpoint is) and the prompt,
 * for scripts/golden/gemma3_transformers.py, which runs this first. Nothing here is committed: the
 * weights are remade from their seed by the test that reads the golden numbers.
 *
 *   npx tsx scripts/golden/gemma3-checkpoint.ts <folder>
 *
 * <folder>/model: config.json + model.safetensors; <folder>/adapter: adapter_config.json +
 * adapter_model.safetensors; <folder>/prompt.json: the prompt's token ids.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ReferenceModel } from '../../src/engine/reference/model';
import {
  GOLDEN_CONFIG_JSON,
  GOLDEN_PROMPT,
  goldenAdapterFiles,
  goldenConfig,
  goldenSftAdapter,
  goldenSafetensors,
  goldenTensors,
} from '../../test/unit/model/gemma3-golden';

const out = process.argv[2];
if (!out) throw new Error('usage: npx tsx scripts/golden/gemma3-checkpoint.ts <folder>');
mkdirSync(join(out, 'model'), { recursive: true });
mkdirSync(join(out, 'adapter'), { recursive: true });
writeFileSync(join(out, 'model', 'config.json'), JSON.stringify(GOLDEN_CONFIG_JSON, null, 2));
const tensors = goldenTensors();
writeFileSync(join(out, 'model', 'model.safetensors'), goldenSafetensors(tensors));
const adapter = goldenAdapterFiles(goldenSftAdapter(new ReferenceModel(goldenConfig(), tensors)));
writeFileSync(join(out, 'adapter', 'adapter_config.json'), adapter.adapterConfig);
writeFileSync(join(out, 'adapter', 'adapter_model.safetensors'), adapter.adapterModel);
writeFileSync(join(out, 'prompt.json'), JSON.stringify(GOLDEN_PROMPT));
