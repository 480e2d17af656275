/**
 * StepBuffers: every GPU buffer a model's forward steps use besides the weights and the KV cache,
 * planned in one table (docs/style.md "For Hearth" 3: name, shape, bytes) from the config and the
 * runner's limits, allocated once, and shared by the prefill graph, the LoRA decode graph and the
 * fused decode graph (a step uses one of them at a time, so they reuse the same activations).
 *
 * Not here: what the kernels do with them (forward-graph.ts, decode-graph.ts).
 */
import { createStorage } from '../gpu/buffers';
import { mlpSlices } from '../kernels/decode-mlp';
import { decodeLoraRowWords } from '../kernels/decode-lora';
import { DecodeStream } from '../kernels/decode-stream';
import { LORA_GROUP_WIDTH, LORA_MAX_RANK } from '../kernels/lora';
import { promptLogprobsStride } from '../kernels/logprobs';
import type { ModelConfig } from '../model/config/model-config';
import { MAX_TOP_LOGPROBS } from '../sampling/logprobs';

export interface StepLimits {
  /** Most tokens in one prefill step (the chunk budget). */
  maxTokens: number;
  /** Most sequences in one step (decode batch, sampled rows, batch rows). */
  maxBatch: number;
  /** Rows of prompt-logprob logits one step can hold. */
  promptLogitRows: number;
  /** f32 floats of the decode-attention partials buffer (DecodeAttention.partialsFloats). */
  partialsFloats: number;
  /** DecodeMlp's slice width (decode-mlp.ts mlpSlices): the stream holds one partial block per slice. */
  mlpSlice: number;
}

export interface PlannedBuffer {
  name: string;
  shape: number[];
  dtype: 'f32' | 'u32';
  bytes: number;
}

/** The table of step buffers for a config and limits, in allocation order. */
export function planActivations(cfg: ModelConfig, lim: StepLimits): PlannedBuffer[] {
  const { hiddenSize: C, numHeads: NH, numKvHeads: NKV, headDim: HS, intermediateSize: F, vocabSize: V } = cfg;
  const T = lim.maxTokens;
  const B = lim.maxBatch;
  const P = mlpSlices(F, lim.mlpSlice).P;
  const entry = (name: string, shape: number[], dtype: 'f32' | 'u32' = 'f32'): PlannedBuffer => ({
    name,
    shape,
    dtype,
    bytes: shape.reduce((a, b) => a * b, 1) * 4,
  });
  return [
    entry('tokens', [T], 'u32'),
    entry('rows', [B, 4], 'u32'),
    entry('h', [T, C]),
    entry('x', [T, C]),
    entry('qkv', [T, (NH + 2 * NKV) * HS]),
    entry('q', [T, NH * HS]),
    entry('att', [T, NH * HS]),
    entry('gu', [T, 2 * F]),
    entry('act', [T, F]),
    entry('loraU', [T, LORA_GROUP_WIDTH, LORA_MAX_RANK]),
    entry('tokenSlots', [T], 'u32'),
    // LoRA on the fused decode graph (decode-lora.ts): each row's adapter header, U and down partials.
    entry('loraRows', [B, decodeLoraRowWords(P)], 'u32'),
    entry('gather', [B], 'u32'),
    entry('scratch', [B, C]),
    entry('logits', [B, V]),
    entry('stream', [1 + P, B, C]),
    entry('partials', [lim.partialsFloats]),
    entry('promptLogits', [lim.promptLogitRows, V]),
    entry('promptGather', [lim.promptLogitRows], 'u32'),
    entry('promptScratch', [lim.promptLogitRows, C]),
    entry('promptTargets', [lim.promptLogitRows], 'u32'),
    entry('promptOut', [lim.promptLogitRows, promptLogprobsStride(MAX_TOP_LOGPROBS)], 'u32'),
  ];
}

export class StepBuffers {
  readonly plan: PlannedBuffer[];
  readonly tokens: GPUBuffer;
  readonly rows: GPUBuffer;
  readonly h: GPUBuffer;
  readonly x: GPUBuffer;
  readonly qkv: GPUBuffer;
  readonly q: GPUBuffer;
  readonly att: GPUBuffer;
  readonly gu: GPUBuffer;
  readonly act: GPUBuffer;
  readonly loraU: GPUBuffer;
  readonly tokenSlots: GPUBuffer;
  readonly loraRows: GPUBuffer;
  readonly gather: GPUBuffer;
  readonly scratch: GPUBuffer;
  readonly logits: GPUBuffer;
  readonly stream: DecodeStream;
  readonly partials: GPUBuffer;
  readonly promptLogits: GPUBuffer;
  readonly promptGather: GPUBuffer;
  readonly promptScratch: GPUBuffer;
  readonly promptTargets: GPUBuffer;
  readonly promptOut: GPUBuffer;
  private readonly all: GPUBuffer[] = [];

  constructor(
    device: GPUDevice,
    cfg: ModelConfig,
    readonly limits: StepLimits,
  ) {
    if (limits.maxTokens < limits.maxBatch)
      throw new Error(
        `StepBuffers: maxTokens ${limits.maxTokens} must be >= maxBatch ${limits.maxBatch} (decode reuses the token buffers)`,
      );
    this.plan = planActivations(cfg, limits);
    const made = new Map<string, GPUBuffer>();
    for (const p of this.plan) {
      if (p.name === 'stream') continue;
      const b = createStorage(device, p.bytes, `step.${p.name}`);
      made.set(p.name, b);
      this.all.push(b);
    }
    const get = (name: string) => made.get(name)!;
    this.tokens = get('tokens');
    this.rows = get('rows');
    this.h = get('h');
    this.x = get('x');
    this.qkv = get('qkv');
    this.q = get('q');
    this.att = get('att');
    this.gu = get('gu');
    this.act = get('act');
    this.loraU = get('loraU');
    this.tokenSlots = get('tokenSlots');
    this.loraRows = get('loraRows');
    this.gather = get('gather');
    this.scratch = get('scratch');
    this.logits = get('logits');
    this.partials = get('partials');
    this.promptLogits = get('promptLogits');
    this.promptGather = get('promptGather');
    this.promptScratch = get('promptScratch');
    this.promptTargets = get('promptTargets');
    this.promptOut = get('promptOut');
    this.stream = new DecodeStream(
      device,
      limits.maxBatch,
      cfg.hiddenSize,
      mlpSlices(cfg.intermediateSize, limits.mlpSlice).P,
      !!cfg.sandwichNorms,
    );
  }

  /** GPU bytes of all step buffers. */
  get bytes(): number {
    return this.all.reduce((s, b) => s + b.size, 0) + this.stream.buffer.size;
  }

  destroy(): void {
    for (const b of this.all) b.destroy();
    this.stream.destroy();
  }
}
