// GGUF metadata as a model: an unsupported architecture or a missing key is refused naming it;
// tensor names map to the HF names the engine plans by; llama's q/k row permutation is undone.
import { describe, expect, it } from 'vitest';
import { ggufModelConfig, hfTensorName, unpermuteRows } from '../../../src/engine/model/gguf/gguf-model';
import { readGguf } from '../../../src/engine/model/gguf/gguf-reader';
import { gv, writeGguf } from '../../../src/engine/model/gguf/gguf-writer';
import { memoryBytes as source } from '../../../src/engine/model/files/safetensors';
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

  it('puts llama q/k rows back in rotate-half order within each head', () => {
    // 2 heads of 4 rows, 1 byte per row: stored order per head is (j0,i0) (j0,i1) (j1,i0) (j1,i1).
    const stored = Uint8Array.from([0, 2, 1, 3, 4, 6, 5, 7]);
    expect(Array.from(unpermuteRows(stored, 2, 4, 1))).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
  });
});
