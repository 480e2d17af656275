// The GGUF LoRA export's file layout and the cases llama.cpp's logit tests (gguf-llama-cpp.test.ts,
// families-llama-cpp.test.ts) do not reach: Phi-3's fused modules land on its fused GGUF weights
// with their bytes and shapes as llama.cpp checks them, a zero scale stays a zero update (llama.cpp
// reads alpha 0 as scale 1), and an architecture without a llama.cpp mapping is refused by name.
import { describe, expect, it } from 'vitest';
import { GgufLoraError, ggufLoraAdapter } from '../../../src/engine/model/gguf/gguf-lora';
import { readGguf, readGgufTensor } from '../../../src/engine/model/gguf/gguf-reader';
import { memoryBytes } from '../../../src/engine/model/files/safetensors';
import { loraModulesOf, loraTensorName } from '../../../src/engine/model/lora/peft-modules';
import { randomLoraTensors } from '../../../src/engine/reference/lora';
import { testConfig } from '../../../src/engine/reference/random-model';

async function read(bytes: Uint8Array) {
  const file = await readGguf(memoryBytes(bytes), 'adapter.gguf');
  const tensor = async (name: string) => {
    const t = file.tensors.find((x) => x.name === name);
    if (!t) throw new Error(`no tensor ${name}`);
    return { ne: t.ne, data: await readGgufTensor(memoryBytes(bytes), t) };
  };
  return { meta: (k: string) => file.metadata.get(k)?.value, names: file.tensors.map((t) => t.name), tensor };
}

describe('GGUF LoRA export', () => {
  it("maps Phi-3's fused qkv_proj and gate_up_proj to attn_qkv and ffn_up, A and B bytes unchanged", async () => {
    const cfg = testConfig('phi3');
    const modules = loraModulesOf(cfg);
    const peft = randomLoraTensors(cfg, 4, modules, 7);
    const file = await read(ggufLoraAdapter(cfg, { rank: 4, alpha: 8 }, peft));
    expect([file.meta('general.architecture'), file.meta('adapter.lora.alpha')]).toEqual(['phi3', 8]);
    expect(file.names.filter((n) => n.startsWith('blk.1.')).sort()).toEqual(
      ['attn_output', 'attn_qkv', 'ffn_down', 'ffn_up'].flatMap((w) => [`blk.1.${w}.weight.lora_a`, `blk.1.${w}.weight.lora_b`]),
    );
    const qkvOut = (cfg.numHeads + 2 * cfg.numKvHeads) * cfg.headDim;
    const b = await file.tensor('blk.1.attn_qkv.weight.lora_b');
    expect(b.ne).toEqual([4, qkvOut]);
    expect(b.data).toEqual(peft.find((t) => t.name === loraTensorName(1, 'qkv_proj', 'B'))!.data);
    const a = await file.tensor('blk.0.ffn_up.weight.lora_a');
    expect(a.ne).toEqual([cfg.hiddenSize, 4]);
    expect(a.data).toEqual(peft.find((t) => t.name === loraTensorName(0, 'gate_up_proj', 'A'))!.data);
    expect((await file.tensor('blk.0.ffn_up.weight.lora_b')).ne).toEqual([4, 2 * cfg.intermediateSize]);
  });

  it('writes a zero-scale adapter with a zero B, and folds rsLoRA into alpha', async () => {
    const cfg = testConfig('qwen2');
    const peft = randomLoraTensors(cfg, 4, ['v_proj'], 8);
    const zero = await read(ggufLoraAdapter(cfg, { rank: 4, alpha: 0 }, peft));
    expect(zero.meta('adapter.lora.alpha')).toBe(0);
    expect((await zero.tensor('blk.0.attn_v.weight.lora_b')).data.every((x) => x === 0)).toBe(true);
    expect((await zero.tensor('blk.0.attn_v.weight.lora_a')).data.some((x) => x !== 0)).toBe(true);
    const rs = await read(ggufLoraAdapter(cfg, { rank: 4, alpha: 3, useRslora: true }, peft));
    expect(rs.meta('adapter.lora.alpha')).toBe(6); // llama.cpp's alpha / r = 6 / 4 = rsLoRA's 3 / sqrt(4)
  });

  it('refuses an architecture llama.cpp adapters are not mapped for, and tensors that do not fit', () => {
    const cfg = testConfig('llama');
    const peft = randomLoraTensors(cfg, 4, ['q_proj'], 9);
    expect(() => ggufLoraAdapter({ ...cfg, arch: 'gpt2' as never }, { rank: 4, alpha: 8 }, peft)).toThrow(GgufLoraError);
    expect(() => ggufLoraAdapter({ ...cfg, arch: 'gpt2' as never }, { rank: 4, alpha: 8 }, peft)).toThrow(/gpt2 .*exportable: llama/);
    expect(() => ggufLoraAdapter(cfg, { rank: 8, alpha: 8 }, peft)).toThrow(/shape/);
  });
});
