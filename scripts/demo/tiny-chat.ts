/**
 * The bundled tiny-chat model as the CPU training scripts (train-demo-pretrain.ts,
 * train-demo-json.ts) use it: its config, tokenizer and chat template, the conversation tokenizer
 * Hearth's SFT path takes, and a safetensors file's tensors.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ChatTemplates } from '../../src/engine/model/text/chat-template';
import { parseModelConfig } from '../../src/engine/model/config/hf-config';
import { SafetensorsFile } from '../../src/engine/model/files/safetensors';
import type { TensorData } from '../../src/engine/tensor/tensor-data';
import { ModelTokenizer } from '../../src/engine/model/text/tokenizer';
import { MODEL_SPECS } from '../model-making/models';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '../..');
export const MODEL_DIR = join(ROOT, 'public/models/tiny-chat/');
export const spec = MODEL_SPECS.find((s) => s.id === 'hearth/tiny-chat')!;
export const config = parseModelConfig(spec.config);
const tokConfig = JSON.parse(readFileSync(join(MODEL_DIR, 'tokenizer_config.json'), 'utf8'));
export const tokenizer = ModelTokenizer.fromJson(JSON.parse(readFileSync(join(MODEL_DIR, 'tokenizer.json'), 'utf8')), tokConfig);
export const template = new ChatTemplates(null, tokConfig.chat_template, tokenizer.specialTokens).forRequest();
/** `<|im_end|>` and `<|endoftext|>`: either ends a reply. */
export const EOS = [2, 0];
export const conv = { tokenizer, template, eosTokenIds: EOS };

export async function readTensors(path: string): Promise<TensorData[]> {
  const file = await SafetensorsFile.open(new Uint8Array(readFileSync(path)), path);
  const out: TensorData[] = [];
  for await (const t of file.tensors()) out.push(t);
  return out;
}
