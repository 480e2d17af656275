// The sliding-window test, through the Engine (scheduler, block manager, prefill and decode
// graphs): the bundled tiny model served as a Mistral checkpoint (MistralForCausalLM,
// sliding_window 16), a prompt of 3x the window prefilled in chunks, then greedy decoding past 4x it.
// Prompt logprobs and every decoded token's logprob equal the reference model with the window
// (full attention restricted to the last 16 keys) and differ from full attention; the blocks the
// sequence holds stay bounded while its context grows past the whole KV cache (flat memory); and
// max_model_len is the model's own limit, not the cache's.
import { afterAll, describe, expect, it } from 'vitest';
import type { Engine } from '../../src/engine/generate/engine';
import { parseModelConfig } from '../../src/engine/model/hf-config';
import { KV_BLOCK, kvBytesPerToken, kvShapeOf } from '../../src/engine/model/kv-cache';
import { loadModelFiles } from '../../src/engine/model/repo';
import type { FileRequest, ModelSource } from '../../src/engine/model/sources/source';
import type { TensorData } from '../../src/engine/model/tensor';
import { ReferenceModel } from '../../src/engine/reference/model';
import { bundled, collect, promptOf, request, testEngine } from './engine-helpers';

const WINDOW = 16;
const ID = 'test/tiny-mistral';

/** tiny-chat's files with its config.json rewritten as Mistral's, with a sliding window. */
class MistralOfTinyChat implements ModelSource {
  readonly id = ID;
  readonly label = 'tiny-chat as a Mistral checkpoint';
  private readonly inner = bundled('hearth/tiny-chat');
  constructor(private readonly config: Record<string, unknown>) {}
  list(): Promise<string[] | null> {
    return this.inner.list();
  }
  async open(file: string, req?: FileRequest): Promise<Blob | null> {
    return file === 'config.json' ? new Blob([JSON.stringify(this.config)]) : this.inner.open(file, req);
  }
}

/** log_softmax(logits)[token]. */
function logprob(logits: Float32Array, token: number): number {
  let max = -Infinity;
  for (const x of logits) max = Math.max(max, x);
  let sum = 0;
  for (const x of logits) sum += Math.exp(x - max);
  return logits[token] - max - Math.log(sum);
}

let engine: Engine | null = null;
afterAll(() => engine?.gpu.device.destroy());

describe('sliding-window attention through the engine', () => {
  it('a context 3x then 4x the window: logprobs of the windowed reference, blocks in use bounded', async () => {
    const tiny = JSON.parse(await (await bundled('hearth/tiny-chat').open('config.json'))!.text());
    const json = { ...tiny, architectures: ['MistralForCausalLM'], model_type: 'mistral', sliding_window: WINDOW };
    const source = new MistralOfTinyChat(json);
    const cfg = parseModelConfig(json);
    const files = await loadModelFiles(source);
    const tensors: TensorData[] = [];
    for await (const t of files.tensors()) tensors.push(t);
    const V = cfg.vocabSize;

    // 4 blocks (64 tokens) in all: less than the 65-token context the request reaches.
    const numBlocks = 4;
    const prefillChunk = 32;
    engine = await testEngine({
      source: async () => source,
      kvCacheBytes: numBlocks * KV_BLOCK * kvBytesPerToken(kvShapeOf(cfg)),
      prefillChunk,
      maxSeqs: 2,
    });
    const served = await engine.loadModel(ID);
    expect(served.maxModelLen).toBe(cfg.maxPositionEmbeddings);
    const blocks = (await engine.residentModel(ID)).blocks;
    expect(blocks.numBlocks).toBe(numBlocks);

    const prompt = promptOf(3 * WINDOW, V, 5);
    const maxTokens = WINDOW + 1;
    const inUse: number[] = [];
    const out = await collect(engine.generate(request(ID, prompt, { maxTokens, promptLogprobs: 1, ignoreEos: true })), 1, (ev) => {
      if ((ev as { type: string }).type === 'tokens') inUse.push(blocks.numBlocks - blocks.available);
    });
    const generated = out.tokens[0];
    expect(generated).toHaveLength(maxTokens);

    // Memory while decoding: the blocks the window spans (2), never the 5 a 65-token context fills.
    expect(inUse.length).toBeGreaterThan(1);
    expect(Math.max(...inUse)).toBeLessThanOrEqual(Math.ceil(WINDOW / KV_BLOCK) + 1);

    const all = [...prompt, ...generated];
    const windowed = new ReferenceModel(cfg, tensors).forward(all);
    const full = new ReferenceModel(
      { ...cfg, slidingWindow: null, layerTypes: cfg.layerTypes.map(() => 'full_attention') },
      tensors,
    ).forward(all);
    const at = (logits: Float32Array, p: number) => logits.subarray(p * V, (p + 1) * V);
    let apart = 0;
    // Prompt positions 1..: the logprob of the prompt's own next token (prefill, in chunks).
    const promptLp = out.prefilled!.promptLogprobs!;
    for (let p = 1; p < prompt.length; p++) {
      const want = logprob(at(windowed, p - 1), prompt[p]);
      expect(promptLp[p]!.logprob, `prompt position ${p}`).toBeCloseTo(want, 2);
      if (p > WINDOW) apart = Math.max(apart, Math.abs(promptLp[p]!.logprob - logprob(at(full, p - 1), prompt[p])));
    }
    // Decoded tokens at positions 48..64: each one's logprob under the windowed reference (decode).
    out.sampled[0].forEach((tok, j) => {
      const p = prompt.length + j;
      const want = logprob(at(windowed, p - 1), tok.id);
      expect(tok.logprob, `decoded position ${p}`).toBeCloseTo(want, 2);
      apart = Math.max(apart, Math.abs(tok.logprob - logprob(at(full, p - 1), tok.id)));
    });
    // The window is in effect: full attention gives other numbers past it.
    expect(apart).toBeGreaterThan(0.05);
  });
});
