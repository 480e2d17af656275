// A multimodal Gemma 3 repository (Gemma3ForConditionalGeneration: config under text_config, the text
// model's tensors under language_model., a vision tower beside it) loads as its text model: the
// engine's tensor names, nothing of the vision tower, and the reference runs on what it streams.
// The tokenizer files are the bundled tiny-chat's (4096 ids): only the weights matter here.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { tensorFromF32 } from '../../../src/engine/tensor/tensor-data';
import { loadModelFiles } from '../../../src/engine/model/files/repo';
import { writeSafetensors } from '../../../src/engine/model/files/safetensors-writer';
import { FilesSource } from '../../../src/engine/model/sources/files-source';
import type { TensorData } from '../../../src/engine/tensor/tensor-data';
import { ReferenceModel } from '../../../src/engine/reference/model';
import { randomGemma3Tensors, tinyGemma3Config, tinyGemma3Json } from './gemma3-fixtures';

const tinyChat = (file: string) => readFileSync(new URL(`../../../public/models/tiny-chat/${file}`, import.meta.url));

describe('a multimodal Gemma 3 repository', () => {
  it('loads its text model under the engine names and leaves the vision tower out', async () => {
    const text = { ...tinyGemma3Json({ vocab_size: 4096, num_hidden_layers: 2 }), architectures: undefined };
    const config = { architectures: ['Gemma3ForConditionalGeneration'], model_type: 'gemma3', text_config: text, vision_config: {} };
    const cfg = tinyGemma3Config({ vocab_size: 4096, num_hidden_layers: 2 });
    const tensors = randomGemma3Tensors(cfg, 'bf16', 5);
    const stored: TensorData[] = [
      ...tensors.map((t) => ({ ...t, name: `language_model.${t.name}` })),
      tensorFromF32('vision_tower.vision_model.post_layernorm.weight', [8], new Float32Array(8), 'f32'),
      tensorFromF32('multi_modal_projector.mm_input_projection_weight', [8, 4], new Float32Array(32), 'f32'),
    ];
    const files = [
      new File([JSON.stringify(config)], 'config.json'),
      new File([tinyChat('tokenizer.json')], 'tokenizer.json'),
      new File([tinyChat('tokenizer_config.json')], 'tokenizer_config.json'),
      new File([writeSafetensors(stored) as BlobPart], 'model.safetensors'),
    ];
    const loaded = await loadModelFiles(new FilesSource(files));
    expect(loaded.config.multimodalCheckpoint).toBe(true);
    expect(loaded.weights.map((w) => w.name).sort()).toEqual(tensors.map((t) => t.name).sort());
    const streamed: TensorData[] = [];
    for await (const t of loaded.tensors()) streamed.push(t);
    expect(streamed.map((t) => t.name).sort()).toEqual(tensors.map((t) => t.name).sort());
    const tokens = [2, 100, 7, 3000];
    expect(new ReferenceModel(loaded.config, streamed).forward(tokens)).toEqual(new ReferenceModel(cfg, tensors).forward(tokens));
  });
});
