// The family parts of a GGUF's model (gguf-families.ts) that test/unit/model/families-llama-cpp.test.ts
// does not reach through llama.cpp: Phi-3's fused names only in phi3 files, Mistral's sliding window
// from `llama.attention.sliding_window`, Gemma 3's sliding pattern, local RoPE base and softmax scale
// read as llama.cpp reads them, and bad RoPE metadata refused naming the key or tensor.
import { describe, expect, it } from 'vitest';
import { ggufModelConfig, ggufRopeOf, hfTensorName } from '../../../src/engine/model/gguf/gguf-model';
import { GgufValueType, readGguf, type GgufMetadataEntry } from '../../../src/engine/model/gguf/gguf-reader';
import { gv, writeGguf, type GgufTensorInput } from '../../../src/engine/model/gguf/gguf-writer';
import { memoryBytes } from '../../../src/engine/model/files/safetensors';

const f32 = (name: string, values: number[]): GgufTensorInput => ({
  name,
  ne: [values.length],
  type: 'F32',
  data: new Uint8Array(Float32Array.from(values).buffer),
});

/** A model of `arch` (head size 8; its layers hold a norm each) with `extra` keys and tensors. */
async function model(arch: string, extra: Array<[string, GgufMetadataEntry]>, tensors: GgufTensorInput[] = [], layers = 2) {
  const bytes = writeGguf({
    metadata: [
      ['general.architecture', gv.str(arch)],
      [`${arch}.block_count`, gv.u32(layers)],
      [`${arch}.context_length`, gv.u32(512)],
      [`${arch}.embedding_length`, gv.u32(16)],
      [`${arch}.feed_forward_length`, gv.u32(32)],
      [`${arch}.attention.head_count`, gv.u32(2)],
      [`${arch}.attention.layer_norm_rms_epsilon`, gv.f32(1e-5)],
      ...extra,
    ],
    tensors: [
      { ...f32('token_embd.weight', Array(16 * 4).fill(0)), ne: [16, 4] },
      ...Array.from({ length: layers }, (_, l) => f32(`blk.${l}.attn_norm.weight`, Array(16).fill(1))),
      ...tensors,
    ],
  });
  const file = await readGguf(memoryBytes(bytes), `${arch}.gguf`);
  return { file, src: memoryBytes(bytes) };
}

describe('GGUF families', () => {
  it('maps fused attn_qkv and ffn_up to Phi-3 names in phi3 files only', () => {
    expect(hfTensorName('blk.1.attn_qkv.weight', 'phi3')).toBe('model.layers.1.self_attn.qkv_proj.weight');
    expect(hfTensorName('blk.1.ffn_up.weight', 'phi3')).toBe('model.layers.1.mlp.gate_up_proj.weight');
    expect(hfTensorName('blk.1.ffn_up.weight', 'llama')).toBe('model.layers.1.mlp.up_proj.weight');
    expect(hfTensorName('blk.1.attn_qkv.weight', 'llama')).toBeNull();
  });

  it("reads Mistral's sliding window from a llama file when it is shorter than the context", async () => {
    const windowed = ggufModelConfig((await model('llama', [['llama.attention.sliding_window', gv.u32(4)]])).file);
    expect([windowed.slidingWindow, windowed.layerTypes]).toEqual([4, ['sliding_attention', 'sliding_attention']]);
    const whole = ggufModelConfig((await model('llama', [['llama.attention.sliding_window', gv.u32(4096)]])).file);
    expect([whole.slidingWindow, whole.layerTypes]).toEqual([null, ['full_attention', 'full_attention']]);
    const half = await model('llama', [['llama.attention.sliding_window', gv.f32(4.5)]]);
    expect(() => ggufModelConfig(half.file, 'm.gguf')).toThrow(
      'm.gguf: metadata key llama.attention.sliding_window (4.5) must be a whole number',
    );
    const none = ggufModelConfig((await model('llama', [])).file);
    expect([none.slidingWindow, none.rotaryDim, none.ropeLayers]).toEqual([null, undefined, undefined]);
    // llama.cpp's n_no_rope_layer_step = 4: layers 3 and 7 (0-based) skip RoPE.
    const smol = ggufModelConfig((await model('smollm3', [], [], 8)).file);
    expect(smol.ropeLayers).toEqual([true, true, true, false, true, true, true, false]);
  });

  it("reads Gemma 3's sliding-window pattern, local RoPE base and softmax scale as llama.cpp does", async () => {
    // Head size 4 (key_length): llama.cpp scales q by 4^-1/2, except in its 27B (62 layers): (16 / 2)^-1/2.
    const gemma = async (layers: number, extra: Array<[string, GgufMetadataEntry]>) =>
      ggufModelConfig((await model('gemma3', [['gemma3.attention.key_length', gv.u32(4)], ...extra], [], layers)).file, 'gemma.gguf');
    const types = (c: { layerTypes: readonly string[] }) => c.layerTypes.map((t) => (t === 'full_attention' ? 'G' : 'L')).join('');
    const window: [string, GgufMetadataEntry] = ['gemma3.attention.sliding_window', gv.u32(512)];
    const every6th = await gemma(7, [window]);
    expect(types(every6th)).toBe('LLLLLGL');
    expect([every6th.slidingWindow, every6th.ropeLocalTheta, every6th.normWeightOffset, every6th.hiddenAct]).toEqual([
      512,
      10000,
      0,
      'gelu_tanh',
    ]);
    expect(every6th.attentionScale).toBeCloseTo(1 / 2, 12);
    expect(types(await gemma(4, [window, ['gemma3.attention.sliding_window_pattern', gv.u32(2)]]))).toBe('LGLG');
    const bools: GgufMetadataEntry = { type: GgufValueType.ARRAY, itemType: GgufValueType.BOOL, value: [false, true, true] };
    expect(types(await gemma(3, [window, ['gemma3.attention.sliding_window_pattern', bools]]))).toBe('GLL');
    const noWindow = await gemma(3, [['gemma3.attention.sliding_window', gv.u32(0)]]);
    expect([types(noWindow), noWindow.slidingWindow]).toEqual(['GGG', null]);
    expect((await gemma(2, [window, ['gemma3.rope.freq_base_swa', gv.f32(20000)]])).ropeLocalTheta).toBe(20000);
    expect((await gemma(62, [window])).attentionScale).toBeCloseTo(8 ** -0.5, 12);
    await expect(gemma(2, [window, ['gemma3.final_logit_softcapping', gv.f32(30)]])).rejects.toThrow(
      'gemma.gguf: metadata key gemma3.final_logit_softcapping (30) is not supported',
    );
    expect(hfTensorName('blk.3.ffn_norm.weight', 'gemma3')).toBe('model.layers.3.pre_feedforward_layernorm.weight');
    expect(hfTensorName('blk.3.post_attention_norm.weight', 'gemma3')).toBe('model.layers.3.post_attention_layernorm.weight');
    expect(hfTensorName('blk.3.post_ffw_norm.weight', 'gemma3')).toBe('model.layers.3.post_feedforward_layernorm.weight');
    expect(hfTensorName('blk.3.ffn_norm.weight', 'llama')).toBe('model.layers.3.post_attention_layernorm.weight');
  });

  it('refuses a rotary size larger than the head, and LongRoPE factors of the wrong size or without their pair', async () => {
    const big = await model('phi3', [['phi3.rope.dimension_count', gv.u32(16)]]);
    expect(() => ggufModelConfig(big.file, 'p.gguf')).toThrow(
      'p.gguf: metadata key phi3.rope.dimension_count (16) must be even and at most the head size 8',
    );

    const rope = async (tensors: GgufTensorInput[], extra: Array<[string, GgufMetadataEntry]> = []) => {
      const m = await model('phi3', [['phi3.rope.dimension_count', gv.u32(4)], ...extra], tensors);
      const cfg = ggufModelConfig(m.file);
      const found = m.file.tensors.filter((t) => t.name.startsWith('rope_')).map((info) => ({ src: m.src, info }));
      return ggufRopeOf(m.file, cfg, found, 'p.gguf');
    };
    const short = f32('rope_factors_short.weight', [1, 2]);
    const long = f32('rope_factors_long.weight', [3, 4]);
    await expect(rope([short])).rejects.toThrow('rope_factors_short.weight and rope_factors_long.weight come together');
    await expect(rope([short, f32('rope_factors_long.weight', [3, 4, 5])])).rejects.toThrow(
      'tensor rope_factors_long.weight must be F32 [2], got F32 [3]',
    );
    await expect(rope([short, long])).rejects.toThrow('p.gguf: metadata key phi3.rope.scaling.original_context_length is missing');
    expect(await rope([short, long], [['phi3.rope.scaling.original_context_length', gv.u32(64)]])).toEqual({
      type: 'longrope',
      shortFactor: [1, 2],
      longFactor: [3, 4],
      originalMaxPositionEmbeddings: 64,
      attentionFactor: 1,
    });
  });
});
