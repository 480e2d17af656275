// The Models view's size estimates against files as published on the Hugging Face Hub (byte counts
// of real downloads, quoted from projects that pin them): an estimate from the shape and each
// type's block size stays within 3% of the real file (the rest is tokenizer and metadata).
import { describe, expect, it } from 'vitest';
import { kvCacheBytes, largestTensorBytes, parameterCount, weightBytes, type FileType, type ModelShape } from '../../../src/ui/model-size';
import recommended from '../../../src/ui/recommended-models.json';

const shape = (name: string) => recommended.models.find((m) => m.name === name)!.shape as ModelShape;

const PUBLISHED: [model: string, type: FileType, file: string, bytes: number][] = [
  ['SmolLM2 135M Instruct', 'Q4_K_M', 'unsloth SmolLM2-135M-Instruct-Q4_K_M.gguf', 105_454_144],
  ['SmolLM2 1.7B Instruct', 'Q4_K_M', 'bartowski SmolLM2-1.7B-Instruct-Q4_K_M.gguf', 1_055_609_824],
  ['Qwen2.5 0.5B Instruct', 'Q4_K_M', 'bartowski Qwen2.5-0.5B-Instruct-Q4_K_M.gguf', 397_808_192],
  ['Qwen3 0.6B', 'Q8_0', 'Qwen Qwen3-0.6B-Q8_0.gguf', 639_446_688],
  ['Qwen3 0.6B', 'Q4_K_M', 'unsloth Qwen3-0.6B-Q4_K_M.gguf', 396_705_472],
  ['Llama 3.2 1B Instruct', 'Q4_K_M', 'bartowski Llama-3.2-1B-Instruct-Q4_K_M.gguf', 807_694_464],
];

describe('recommended model sizes', () => {
  it.each(PUBLISHED)('%s %s is about the size of %s', (model, type, _file, bytes) => {
    const estimate = weightBytes(shape(model), type);
    expect(estimate).toBeLessThanOrEqual(bytes);
    expect(estimate).toBeGreaterThan(bytes * 0.97);
  });

  it('counts the parameters the model cards give', () => {
    expect(parameterCount(shape('Qwen2.5 0.5B Instruct'))).toBeCloseTo(494_032_768, -3);
    expect(parameterCount(shape('Llama 3.2 1B Instruct'))).toBeCloseTo(1_235_814_400, -3);
    // Gemma 3: four norms a layer and q/k norms (transformers' num_parameters() of the checkpoints).
    expect(parameterCount(shape('Gemma 3 270M Instruct'))).toBe(268_098_176);
    expect(parameterCount(shape('Gemma 3 1B Instruct'))).toBe(999_885_952);
  });

  it("marks Google's Gemma 3 repositories gated (a token is needed)", () => {
    const gemma = recommended.models.filter((m) => m.name.startsWith('Gemma 3'));
    expect(gemma.map((m) => m.name)).toEqual(['Gemma 3 270M Instruct', 'Gemma 3 1B Instruct']);
    for (const m of gemma) {
      const google = m.downloads.filter((d) => d.repo.startsWith('google/'));
      expect(google.map((d) => [d.format, 'gated' in d && d.gated])).toEqual([['safetensors', true]]);
    }
  });

  it('weighs BF16 at 2 bytes a parameter and finds the largest tensor', () => {
    const s = shape('Qwen2.5 1.5B Instruct');
    // BF16 safetensors: about 2 bytes a parameter (norms and biases stay F32).
    expect(weightBytes(s, 'BF16') / parameterCount(s)).toBeCloseTo(2, 3);
    // Qwen's 151936 x 1536 embedding, BF16, is larger than a 256 MiB binding.
    expect(largestTensorBytes(s, 'BF16')).toBe(151936 * 1536 * 2);
    expect(kvCacheBytes(true)).toBeLessThan(kvCacheBytes(false));
  });

  it('lists every recommended model in safetensors and in GGUF', () => {
    for (const m of recommended.models) {
      expect(m.downloads.map((d) => d.format).sort(), m.name).toEqual(['gguf', 'gguf', 'safetensors']);
      for (const d of m.downloads) if (d.format === 'gguf') expect(d.file, m.name).toMatch(/\.gguf$/);
    }
  });
});
