// GGUF metadata as a model: an unsupported architecture or a missing key is refused naming it;
// tensor names map to the HF names the engine plans by; llama's q/k row permutation is undone.
import { describe, expect, it } from 'vitest';
import { ggufModelConfig, hfTensorName, unpermuteRows } from '../../../src/engine/model/gguf/gguf-model';
import { GgufValueType, readGguf } from '../../../src/engine/model/gguf/gguf-reader';
import { gv, writeGguf } from '../../../src/engine/model/gguf/gguf-writer';
import { memoryBytes as source } from '../../../src/engine/model/safetensors';
import { randomGguf } from './gguf-fixtures';

describe('GGUF model metadata', () => {
  it('maps every tensor of a llama file to its HF name', async () => {
    const file = await readGguf(source(randomGguf('Q8_0', 1, 'F32', 'llama').gguf));
    const names = file.tensors.map((t) => [t.name, hfTensorName(t.name)]);
    expect(names).toContainEqual(['blk.1.ffn_norm.weight', 'model.layers.1.post_attention_layernorm.weight']);
    expect(names).toContainEqual(['blk.0.attn_output.weight', 'model.layers.0.self_attn.o_proj.weight']);
    expect(names).toContainEqual(['output.weight', 'lm_head.weight']);
    expect(names).toContainEqual(['rope_freqs.weight', null]);
    expect(hfTensorName('blk.0.attn_q.bias')).toBe('model.layers.0.self_attn.q_proj.bias');
    expect(hfTensorName('blk.0.ffn_gate_exps.weight')).toBeNull();
  });

  it('refuses an unsupported architecture and names a missing key', async () => {
    const tensors = [{ name: 'token_embd.weight', ne: [4, 2], type: 'F32', data: new Uint8Array(32) }];
    const gpt2 = await readGguf(source(writeGguf({ metadata: [['general.architecture', gv.str('gpt2')]], tensors })));
    expect(() => ggufModelConfig(gpt2, 'g.gguf')).toThrow(
      'g.gguf: architecture gpt2 is not supported (supported: llama, qwen2, qwen3, phi3, smollm3',
    );
    const partial = await readGguf(
      source(
        writeGguf({
          metadata: [
            ['general.architecture', gv.str('llama')],
            ['llama.embedding_length', gv.u32(4)],
          ],
          tensors,
        }),
      ),
    );
    expect(() => ggufModelConfig(partial, 'p.gguf')).toThrow('p.gguf: metadata key llama.attention.head_count is missing');
    const none = await readGguf(source(writeGguf({ metadata: [], tensors })));
    expect(() => ggufModelConfig(none, 'n.gguf')).toThrow('n.gguf: metadata key general.architecture is missing');
  });

  it("reads Gemma 3's sliding-window pattern, local RoPE base and softmax scale as llama.cpp does", async () => {
    const gemma = async (layers: number, extra: Array<[string, ReturnType<typeof gv.u32>]>) => {
      const a = 'gemma3';
      const tensors = [
        { name: 'token_embd.weight', ne: [8, 4], type: 'F32', data: new Uint8Array(128) },
        ...Array.from({ length: layers }, (_, l) => ({
          name: `blk.${l}.attn_norm.weight`,
          ne: [8],
          type: 'F32',
          data: new Uint8Array(32),
        })),
      ];
      const metadata: Array<[string, ReturnType<typeof gv.u32>]> = [
        ['general.architecture', gv.str(a)],
        [`${a}.block_count`, gv.u32(layers)],
        [`${a}.context_length`, gv.u32(1024)],
        [`${a}.embedding_length`, gv.u32(8)],
        [`${a}.feed_forward_length`, gv.u32(16)],
        [`${a}.attention.head_count`, gv.u32(4)],
        [`${a}.attention.key_length`, gv.u32(4)],
        [`${a}.attention.layer_norm_rms_epsilon`, gv.f32(1e-6)],
        ...extra,
      ];
      return ggufModelConfig(await readGguf(source(writeGguf({ metadata, tensors }))), 'gemma.gguf');
    };
    const types = (c: { layerTypes: readonly string[] }) => c.layerTypes.map((t) => (t === 'full_attention' ? 'G' : 'L')).join('');
    const window: [string, ReturnType<typeof gv.u32>] = ['gemma3.attention.sliding_window', gv.u32(512)];
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
    const bools: [string, ReturnType<typeof gv.u32>] = [
      'gemma3.attention.sliding_window_pattern',
      { type: GgufValueType.ARRAY, itemType: GgufValueType.BOOL, value: [false, true, true] },
    ];
    expect(types(await gemma(3, [window, bools]))).toBe('GLL');
    const noWindow = await gemma(3, [['gemma3.attention.sliding_window', gv.u32(0)]]);
    expect([types(noWindow), noWindow.slidingWindow]).toEqual(['GGG', null]);
    expect((await gemma(2, [window, ['gemma3.rope.freq_base_swa', gv.f32(20000)]])).ropeLocalTheta).toBe(20000);
    // 62 layers is llama.cpp's 27B: scaled by (n_embd / n_head)^-1/2 = 2^-1/2, not head_dim^-1/2.
    expect((await gemma(62, [window])).attentionScale).toBeCloseTo(Math.SQRT1_2, 12);
    await expect(gemma(2, [window, ['gemma3.final_logit_softcapping', gv.f32(30)]])).rejects.toThrow(
      'gemma.gguf: metadata key gemma3.final_logit_softcapping (30) is not supported',
    );
    expect(hfTensorName('blk.3.ffn_norm.weight', 'gemma3')).toBe('model.layers.3.pre_feedforward_layernorm.weight');
    expect(hfTensorName('blk.3.post_attention_norm.weight', 'gemma3')).toBe('model.layers.3.post_attention_layernorm.weight');
    expect(hfTensorName('blk.3.post_ffw_norm.weight', 'gemma3')).toBe('model.layers.3.post_feedforward_layernorm.weight');
  });

  it('puts llama q/k rows back in rotate-half order within each head', () => {
    // 2 heads of 4 rows, 1 byte per row: stored order per head is (j0,i0) (j0,i1) (j1,i0) (j1,i1).
    const stored = Uint8Array.from([0, 2, 1, 3, 4, 6, 5, 7]);
    expect(Array.from(unpermuteRows(stored, 2, 4, 1))).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
  });
});
