/**
 * Prompt logprobs on the GPU: over T rows of prefill logits [T, V] and the actual next tokens,
 * each row's raw logprob of its next token (floored at -9999), the token's vLLM rank, and the k
 * best alternatives (k <= 20), best first. One dispatch, one workgroup per row (a prefill has many
 * rows, so rows fill the GPU); the top-k is the sampler's radix select (sampler-radix.wgsl),
 * pruned by the k-th largest per-thread max, so no row is sorted. Recorded into the caller's
 * pass, never submitted. Output row r is (2 + 2k) u32 words: logprob bits, rank, k (id, logprob).
 *
 * vLLM (docs/reference/vllm-chat.md §3.3) reports for prompt position p >= 1 the
 * logprob of prompt token p under the logits of position p - 1; the caller passes those logits
 * rows and targets[r] = the following prompt token (an id >= V gives logprob -9999, rank V).
 * Not here: the sampler (sampler.ts), the reference (reference/logprobs.ts).
 */
import type { KernelContext } from '../gpu/context';
import { MAX_TOP_LOGPROBS, type PositionLogprobs, type TokenLogprob } from '../sampling/logprobs';
import { KernelCall } from '../gpu/kernel-call';
import { SpecKernel } from './spec-kernel';
import type { SamplerWorkgroupSize } from './sampler';
import { PROMPT_LOGPROBS_SPEC } from './sampler-specs';
import { packUniformValues } from './spec';

const MAX_GRID_X = 65535;

/** u32 words per output row for k alternatives. */
export function promptLogprobsStride(k: number): number {
  return 2 + 2 * k;
}

export interface PromptLogprobsArgs {
  /** u32 [T, 2 + 2k], written: per row the target's logprob and rank, then k (id, logprob) pairs. */
  out: GPUBuffer;
  /** f32 [T, V]. */
  logits: GPUBuffer;
  /** u32 [T]: each row's target token. */
  targets: GPUBuffer;
  T: number;
  V: number;
  k: number;
}

export class PromptLogprobs extends SpecKernel {
  private readonly pass: GPUComputePipeline;
  /** Uniforms by "V,k" (a handful per model): records with different shapes may share a submission. */
  private readonly uniforms = new Map<string, GPUBuffer>();

  private readonly device: GPUDevice;

  /** workgroupSize: as for the Sampler (256 on GPUs, 32 on software adapters). */
  constructor(
    ctx: KernelContext,
    readonly workgroupSize: SamplerWorkgroupSize = 256,
  ) {
    super(ctx, PROMPT_LOGPROBS_SPEC);
    this.device = ctx.device;
    this.pass = this.pipeline({ label: 'logprobs.prompt', entryPoint: 'prompt_logprobs', overrides: { WG: workgroupSize } });
  }

  /**
   * The kernel's one dispatch: out (T, 2 + 2k) u32 from logits (T, V) f32 and targets (T) u32. The
   * call binds the uniform block cached for (V, k), so it owns no buffer (dispose is a no-op).
   */
  encode(a: PromptLogprobsArgs): KernelCall[] {
    const { out, logits, targets, T, V, k } = a;
    if (!(Number.isInteger(T) && T >= 1)) throw new Error(`PromptLogprobs: T must be >= 1, got ${T}.`);
    if (!(Number.isInteger(k) && k >= 0 && k <= Math.min(MAX_TOP_LOGPROBS, V))) {
      throw new Error(`PromptLogprobs: k must be in [0, ${Math.min(MAX_TOP_LOGPROBS, V)}], got ${k}.`);
    }
    if (logits.size < T * V * 4) throw new Error(`PromptLogprobs: logits holds ${logits.size} bytes, needs T*V*4 = ${T * V * 4}.`);
    if (targets.size < T * 4) throw new Error(`PromptLogprobs: targets holds ${targets.size} bytes, needs ${T * 4}.`);
    const outBytes = T * promptLogprobsStride(k) * 4;
    if (out.size < outBytes) throw new Error(`PromptLogprobs: out holds ${out.size} bytes, needs ${outBytes}.`);
    const gridX = Math.min(T, MAX_GRID_X);
    // targets is bound with exactly T words: the kernel reads T from its length.
    const group = this.bindGroup(PROMPT_LOGPROBS_SPEC, { logits, targets: { buffer: targets, size: T * 4 }, out }, this.dims(V, k));
    return [new KernelCall('logprobs.prompt', this.pass, group, [gridX, Math.ceil(T / gridX), 1], null)];
  }

  destroy(): void {
    for (const u of this.uniforms.values()) u.destroy();
    this.uniforms.clear();
  }

  private dims(V: number, k: number): GPUBuffer {
    const key = `${V},${k}`;
    let u = this.uniforms.get(key);
    if (!u) {
      u = this.device.createBuffer({ label: `logprobs.dims ${key}`, size: 16, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
      this.device.queue.writeBuffer(u, 0, packUniformValues(PROMPT_LOGPROBS_SPEC, { V, k }));
      this.uniforms.set(key, u);
    }
    return u;
  }
}

/** Decodes T output rows of `PromptLogprobs.record` for k alternatives. */
export function decodePromptLogprobs(bytes: ArrayBuffer, T: number, k: number): PositionLogprobs[] {
  const u32 = new Uint32Array(bytes);
  const f32 = new Float32Array(bytes);
  const stride = promptLogprobsStride(k);
  const out: PositionLogprobs[] = [];
  for (let r = 0; r < T; r++) {
    const o = r * stride;
    const top: TokenLogprob[] = [];
    for (let j = 0; j < k; j++) top.push({ id: u32[o + 2 + 2 * j], logprob: f32[o + 3 + 2 * j] });
    out.push({ logprob: f32[o], rank: u32[o + 1], top });
  }
  return out;
}
