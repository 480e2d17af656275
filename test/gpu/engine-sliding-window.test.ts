// The sliding-window test, through the Engine (scheduler, block manager, prefill and decode
// graphs): the bundled tiny model served as a Mistral checkpoint (MistralForCausalLM,
// sliding_window 16), a prompt of 3x the window prefilled in chunks, then greedy decoding past 4x it.
// Prompt logprobs and every decoded token's logprob equal the reference model with the window
// (full attention restricted to the last 16 keys) and differ from full attention; the blocks the
// sequence holds stay bounded while its context grows past the whole KV cache (flat memory); and
// max_model_len is the model's own limit, not the cache's. The same weights as a hybrid model
// (`layer_types`: local, global, local, global, as Gemma 3 mixes them) keep the local layers' K/V in
// a pool of their own: at 3x the window its blocks in use stay at the window's while the global
// layers' pool holds the whole context, and prompt and decode logprobs match the hybrid reference,
// also for a prefix-cache hit (whose local blocks before the window are gone) and for two sequences
// decoded together with one preempted and recomputed. A tiny Gemma 3 (its config format, 5 local
// layers then a global one, random weights) decodes through the general graph (the default for
// sandwich norms, decode-graph.ts DecodeGraphChoice) past 3x the window with the same bounded local
// pool and the reference's logprobs.
import { afterAll, describe, expect, it } from 'vitest';
import type { KvBlockManager } from '../../src/engine/model/kv/block-manager';
import type { Engine } from '../../src/engine/generate/engine';
import type { ModelConfig } from '../../src/engine/model/config/model-config';
import { parseModelConfig } from '../../src/engine/model/config/hf-config';
import { kvBytesPerToken, kvShapeOf } from '../../src/engine/model/kv/kv-cache';
import { KV_BLOCK } from '../../src/engine/kernels/kv-layout';
import { loadModelFiles } from '../../src/engine/model/files/repo';
import type { FileRequest, ModelSource } from '../../src/engine/model/sources/source';
import type { TensorData } from '../../src/engine/tensor/tensor-data';
import { writeSafetensors } from '../../src/engine/model/files/safetensors-writer';
import { ReferenceModel } from '../../src/engine/reference/model';
import { randomGemma3Tensors, tinyGemma3Json } from '../unit/model/gemma3-fixtures';
import { bundled, collect, promptOf, request, testEngine, type Outcome } from './engine-helpers';
import type { GenerationRequest } from '../../src/engine/generate/types';

const WINDOW = 16;
/** 4 blocks (64 tokens) per model: less than the 65-token context the Mistral request reaches. */
const NUM_BLOCKS = 4;
const PREFILL_CHUNK = 32;

/** tiny-chat's files under another id, with its config.json rewritten (and its weights, when given). */
class TinyChatAs implements ModelSource {
  readonly label = 'tiny-chat with another config.json';
  private readonly inner = bundled('hearth/tiny-chat');
  constructor(
    readonly id: string,
    private readonly config: Record<string, unknown>,
    private readonly weights?: Uint8Array,
  ) {}
  list(): Promise<string[] | null> {
    return this.inner.list();
  }
  async open(file: string, req?: FileRequest): Promise<Blob | null> {
    if (file === 'config.json') return new Blob([JSON.stringify(this.config)]);
    if (file === 'model.safetensors' && this.weights) return new Blob([this.weights as Uint8Array<ArrayBuffer>]);
    return this.inner.open(file, req);
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

const sources = new Map<string, TinyChatAs>();
/** Engines by KV budget (in blocks of every layer) and prefill chunk, on one device. */
const engines = new Map<string, Engine>();
afterAll(() => engines.values().next().value?.gpu.device.destroy());

/**
 * Serves tiny-chat's weights under `id` with `changes` to its config.json, on the engine of a
 * `blocks`-block budget and `chunk`-token prefill steps.
 */
async function serve(
  id: string,
  changes: Record<string, unknown>,
  { blocks, chunk } = { blocks: NUM_BLOCKS, chunk: PREFILL_CHUNK },
  model?: { json: Record<string, unknown>; tensors: TensorData[] },
): Promise<{ engine: Engine; cfg: ModelConfig; tensors: TensorData[] }> {
  const tiny = JSON.parse(await (await bundled('hearth/tiny-chat').open('config.json'))!.text());
  const json = model?.json ?? { ...tiny, architectures: ['MistralForCausalLM'], model_type: 'mistral', ...changes };
  sources.set(id, new TinyChatAs(id, json, model && writeSafetensors(model.tensors)));
  const cfg = parseModelConfig(json);
  const key = `${blocks}:${chunk}:${JSON.stringify(kvShapeOf(cfg))}`;
  const engine =
    engines.get(key) ??
    (await testEngine({
      source: async (which) => sources.get(which)!,
      kvCacheBytes: blocks * KV_BLOCK * kvBytesPerToken(kvShapeOf(cfg)),
      prefillChunk: chunk,
      maxSeqs: 2,
    }));
  engines.set(key, engine);
  const tensors: TensorData[] = [];
  for await (const t of (await loadModelFiles(sources.get(id)!)).tensors()) tensors.push(t);
  return { engine, cfg, tensors };
}

const inUse = (m: KvBlockManager) => m.numBlocks - m.available;

/**
 * Runs `req` to its end on a hybrid model's engine; the most blocks its main (global layers') and
 * local (sliding layers') pools held after any token event.
 */
async function generateWatchingPools(
  engine: Engine,
  mgr: KvBlockManager,
  req: GenerationRequest,
): Promise<{ out: Outcome; most: { global: number; local: number } }> {
  const most = { global: 0, local: 0 };
  const out = await collect(engine.generate(req), 1, (ev) => {
    if ((ev as { type: string }).type !== 'tokens') return;
    most.global = Math.max(most.global, inUse(mgr));
    most.local = Math.max(most.local, inUse(mgr.local!));
  });
  return { out, most };
}

/**
 * Checks every prompt logprob (positions 1.., when asked) and decoded token's logprob against
 * `cfg`'s reference over the same tokens; returns how far they are from full attention past the
 * window (0 without `vsFull`).
 */
function checkAgainstReference(cfg: ModelConfig, tensors: TensorData[], prompt: number[], out: Outcome, vsFull = true): number {
  const V = cfg.vocabSize;
  const all = [...prompt, ...out.tokens[0]];
  const want = new ReferenceModel(cfg, tensors).forward(all);
  const fullCfg = { ...cfg, slidingWindow: null, layerTypes: cfg.layerTypes.map(() => 'full_attention' as const) };
  const full = vsFull ? new ReferenceModel(fullCfg, tensors).forward(all) : want;
  const at = (logits: Float32Array, p: number) => logits.subarray(p * V, (p + 1) * V);
  let apart = 0;
  const promptLp = out.prefilled?.promptLogprobs ?? [];
  for (let p = 1; p < promptLp.length; p++) {
    expect(promptLp[p]!.logprob, `prompt position ${p}`).toBeCloseTo(logprob(at(want, p - 1), prompt[p]), 2);
    if (p > WINDOW) apart = Math.max(apart, Math.abs(promptLp[p]!.logprob - logprob(at(full, p - 1), prompt[p])));
  }
  out.sampled[0].forEach((tok, j) => {
    const p = prompt.length + j;
    expect(tok.logprob, `decoded position ${p}`).toBeCloseTo(logprob(at(want, p - 1), tok.id), 2);
    apart = Math.max(apart, Math.abs(tok.logprob - logprob(at(full, p - 1), tok.id)));
  });
  return apart;
}

describe('sliding-window attention through the engine', () => {
  it('every layer slides: a context 3x then 4x the window gives the windowed logprobs with bounded blocks', async () => {
    const id = 'test/tiny-mistral';
    const { engine, cfg, tensors } = await serve(id, { sliding_window: WINDOW });
    const served = await engine.loadModel(id);
    expect(served.maxModelLen).toBe(cfg.maxPositionEmbeddings);
    const blocks = (await engine.residentModel(id)).blocks;
    expect(blocks.numBlocks).toBe(NUM_BLOCKS);

    const prompt = promptOf(3 * WINDOW, cfg.vocabSize, 5);
    const maxTokens = WINDOW + 1;
    const inUse: number[] = [];
    const out = await collect(engine.generate(request(id, prompt, { maxTokens, promptLogprobs: 1, ignoreEos: true })), 1, (ev) => {
      if ((ev as { type: string }).type === 'tokens') inUse.push(blocks.numBlocks - blocks.available);
    });
    expect(out.tokens[0]).toHaveLength(maxTokens);
    // Memory while decoding: the blocks the window spans (2), never the 5 a 65-token context fills.
    expect(inUse.length).toBeGreaterThan(1);
    expect(Math.max(...inUse)).toBeLessThanOrEqual(Math.ceil(WINDOW / KV_BLOCK) + 1);
    // Prefill (in chunks) and decode match the windowed reference; full attention gives other numbers.
    expect(checkAgainstReference(cfg, tensors, prompt, out)).toBeGreaterThan(0.05);
  });

  it('local and global layers (layer_types): a flat local pool at 3x the window, prefix hits and preemption match the reference', async () => {
    const id = 'test/tiny-hybrid';
    const layerTypes = ['sliding_attention', 'full_attention', 'sliding_attention', 'full_attention'];
    // 8 blocks of every layer, prefill steps of 16 tokens: the local pool gets what 2 sequences hold
    // at most (2 x (1 + 2) + 1 = 7 blocks: model/kv/kv-pools.ts), the global layers the rest (9 blocks).
    const { engine, cfg, tensors } = await serve(id, { sliding_window: WINDOW, layer_types: layerTypes }, { blocks: 8, chunk: 16 });
    expect(cfg.layerTypes).toEqual(layerTypes);
    const served = await engine.loadModel(id);
    expect(served.maxModelLen).toBe(9 * KV_BLOCK); // the global layers keep every block: their pool bounds it
    const model = await engine.residentModel(id);
    const mgr = model.blocks;
    const local = mgr.local!;
    expect([mgr.numBlocks, local.numBlocks, model.kv.localNumBlocks]).toEqual([9, 7, 7]);

    // A prompt of 3x the window (three prefill steps), then decoding.
    const prompt = promptOf(3 * WINDOW, cfg.vocabSize, 9);
    const { out: first, most } = await generateWatchingPools(
      engine,
      mgr,
      request(id, prompt, { maxTokens: 6, promptLogprobs: 1, ignoreEos: true }),
    );
    expect(checkAgainstReference(cfg, tensors, prompt, first)).toBeGreaterThan(0.05);
    // KV memory: the global layers hold the 54-token context (4 blocks), the local layers the window's.
    expect(most.global).toBe(4);
    expect(most.local).toBeLessThanOrEqual(Math.ceil(WINDOW / KV_BLOCK) + 1);

    // The same prompt again: its first 2 blocks come from the prefix cache (the local pool's block 0
    // was dropped, block 1 is in the window of position 32), the rest is computed, and every decoded
    // logprob matches the reference.
    const again = await collect(engine.generate(request(id, prompt, { maxTokens: 6, ignoreEos: true })), 1);
    expect(again.prefilled!.cachedTokens).toBe(2 * KV_BLOCK);
    expect(again.tokens[0]).toEqual(first.tokens[0]);
    checkAgainstReference(cfg, tensors, prompt, again, false);

    // Two sequences of 76 tokens need 10 global blocks of the 9: decoded together until the second
    // needs a fifth block while the first holds five and is preempted, recomputed once the first
    // ends, and both match the reference.
    const preemptions = model.scheduler.stats.preemptions;
    const prompts = [promptOf(3 * WINDOW, cfg.vocabSize, 3), promptOf(3 * WINDOW, cfg.vocabSize, 4)];
    const outs = await Promise.all(prompts.map((p) => collect(engine.generate(request(id, p, { maxTokens: 28, ignoreEos: true })), 1)));
    expect(model.scheduler.stats.preemptions).toBeGreaterThan(preemptions);
    outs.forEach((out, i) => {
      expect(out.tokens[0]).toHaveLength(28);
      checkAgainstReference(cfg, tensors, prompts[i], out, false);
    });
    expect([inUse(mgr), inUse(local)]).toEqual([0, 0]);
  });

  it('Gemma 3 (5 local layers, then a global one): decoding through the general graph past 3x the window keeps the local pool flat', async () => {
    const id = 'test/tiny-gemma3-window';
    // Gemma 3's config format with a 16-token window; tiny-chat's tokenizer, so its vocabulary size.
    const json = tinyGemma3Json({ sliding_window: WINDOW, vocab_size: 4096 });
    const model = { json, tensors: randomGemma3Tensors(parseModelConfig(json), 'f32', 21) };
    const { engine, cfg, tensors } = await serve(id, {}, { blocks: 8, chunk: 16 }, model);
    expect(cfg.layerTypes.filter((t) => t === 'sliding_attention')).toHaveLength(5);
    await engine.loadModel(id);
    const resident = await engine.residentModel(id);
    const prompt = promptOf(3 * WINDOW, cfg.vocabSize, 5);
    const { out, most } = await generateWatchingPools(
      engine,
      resident.blocks,
      request(id, prompt, { maxTokens: 8, promptLogprobs: 1, ignoreEos: true }),
    );
    expect(out.tokens[0]).toHaveLength(8);
    expect(resident.runner.lastStep?.graph).toBe('decode-general');
    expect(checkAgainstReference(cfg, tensors, prompt, out)).toBeGreaterThan(0.05);
    // The global layer holds the 56-token context; the local layers the window's blocks and a step's.
    expect(most.global).toBe(Math.ceil((3 * WINDOW + 8) / KV_BLOCK));
    expect(most.local).toBeLessThanOrEqual(Math.ceil(WINDOW / KV_BLOCK) + 1);
  });
});
