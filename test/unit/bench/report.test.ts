// scripts/bench/report.ts, the LoRA decode table (`npm run bench -- --lora-rank r`): one row per model
// and batch with the adapter's rank, the same run's decode without an adapter at that batch, the graph
// that ran and the general LoRA graph's dispatches per layer; models measured without --lora-rank
// give no rows.
import { describe, expect, it } from 'vitest';
import type { DecodeFigures, GenerationBenchResult, LoraDecodeFigures } from '../../../scripts/bench/generation';
import { loraDecodeTable } from '../../../scripts/bench/report';

const SEVEN = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'];

function base(batch: number, tokensPerSecond: number): DecodeFigures {
  return {
    batch,
    tokensPerSecond,
    stepMs: (1000 * batch) / tokensPerSecond,
    graph: batch <= 4 ? 'decode-fused' : 'decode-unfused',
    dispatchesPerLayer: batch <= 4 ? 4 : 5,
    dispatchesPerStep: 0,
    submissionsPerStep: 1,
    readbackBytesPerSequence: 16,
    bandwidthRatio: null,
  };
}

function lora(batch: number, tokensPerSecond: number, modules = SEVEN): LoraDecodeFigures {
  return {
    batch,
    rank: 16,
    modules,
    tokensPerSecond,
    stepMs: (1000 * batch) / tokensPerSecond,
    graph: 'decode-fused-lora',
    dispatchesPerLayer: 7,
    dispatchesPerStep: 0,
    generalDispatchesPerLayer: 19,
  };
}

function result(model: string, layers: number, decode: DecodeFigures[], loraDecode?: LoraDecodeFigures[]): GenerationBenchResult {
  return {
    model,
    layers,
    totalLayers: 30,
    parameters: 1e8,
    device: 'test',
    promptTokens: 128,
    ttftMs: 10,
    prefillTokensPerSecond: 100,
    decode,
    loraDecode,
    gpuBytes: { weights: 0, kvCache: 0, activations: 0, total: 0 },
    weightBytesPerToken: 0,
    maxModelLen: 256,
  };
}

describe('loraDecodeTable', () => {
  it('gives each batch its adapter, the decode without it, the graph and both dispatch counts', () => {
    const table = loraDecodeTable([
      result('smollm2-135m', 4, [base(1, 300), base(8, 1200)], [lora(1, 250), lora(8, 900)]),
      result('qwen2.5-0.5b', 30, [base(1, 200)], [lora(1, 150, ['q_proj', 'v_proj'])]),
      result('tiny-chat', 30, [base(1, 500)]),
    ]);
    const rows = table.split('\n').slice(2);
    expect(rows).toEqual([
      '| smollm2-135m | 4 of 30 | LoRA rank 16, all seven projections | 1 | 250.0 | 4.0 | 300.0 | decode-fused-lora | 7 | 19 |',
      '| smollm2-135m | 4 of 30 | LoRA rank 16, all seven projections | 8 | 900.0 | 8.9 | 1200.0 | decode-fused-lora | 7 | 19 |',
      '| qwen2.5-0.5b | 30 | LoRA rank 16, q_proj, v_proj | 1 | 150.0 | 6.7 | 200.0 | decode-fused-lora | 7 | 19 |',
    ]);
    expect(table.split('\n')[0]).toContain('| without LoRA tok/s | graph | dispatches / layer | general LoRA graph dispatches / layer |');
  });
});
