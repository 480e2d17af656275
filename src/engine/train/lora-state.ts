/**
 * The LoRA training state on the GPU: four f32 buffers laid out by one LoraPlan (lora-plan.ts):
 * the parameters (f32 master weights), their gradients (cleared at the start of every optimizer
 * step, accumulated over its micro-batches in a fixed order), and AdamW's two moments; plus the
 * optimizer step count. Uploads from and downloads to PEFT tensors.
 *
 * Not here: the update itself (kernels/adamw.ts), what writes the gradients (graph-backward.ts).
 */
import { readF32, writeBytes } from '../gpu/buffers';
import type { TensorData } from '../tensor/tensor-data';
import { flatFromSuffixed, loraToTensors, type LoraPlan } from './lora-plan';
import type { OptimizerState } from './types';

const EXP_AVG = '.exp_avg';
const EXP_AVG_SQ = '.exp_avg_sq';

export class LoraState {
  readonly params: GPUBuffer;
  readonly grads: GPUBuffer;
  readonly m: GPUBuffer;
  readonly v: GPUBuffer;
  /** AdamW updates applied so far (the next update is step + 1). */
  step = 0;

  constructor(
    private readonly device: GPUDevice,
    readonly plan: LoraPlan,
  ) {
    const make = (what: string) =>
      device.createBuffer({
        label: `lora.${what}`,
        size: Math.max(16, Math.ceil((plan.elements * 4) / 16) * 16),
        usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC,
      });
    this.params = make('params');
    this.grads = make('grads');
    this.m = make('exp_avg');
    this.v = make('exp_avg_sq');
  }

  /** Bytes of the four buffers. */
  get bytes(): number {
    return this.params.size * 4;
  }

  setParameters(values: Float32Array): void {
    if (values.length !== this.plan.elements) throw new Error(`LoRA state: ${values.length} values for ${this.plan.elements} parameters`);
    writeBytes(this.device, this.params, 0, values);
  }

  /** Fresh moments (zeros) at step 0, or a saved optimizer state (PEFT names + .exp_avg / .exp_avg_sq). */
  setOptimizerState(state: OptimizerState | null): void {
    if (!state) {
      const zeros = new Float32Array(this.plan.elements);
      writeBytes(this.device, this.m, 0, zeros);
      writeBytes(this.device, this.v, 0, zeros);
      this.step = 0;
      return;
    }
    if (!Number.isInteger(state.step) || state.step < 0)
      throw new Error(`optimizer state: step ${state.step} is not a non-negative integer`);
    writeBytes(this.device, this.m, 0, flatFromSuffixed(this.plan, state.tensors, EXP_AVG));
    writeBytes(this.device, this.v, 0, flatFromSuffixed(this.plan, state.tensors, EXP_AVG_SQ));
    this.step = state.step;
  }

  async parameters(): Promise<Float32Array> {
    return readF32(this.device, this.params, this.plan.elements);
  }

  async gradients(): Promise<Float32Array> {
    return readF32(this.device, this.grads, this.plan.elements);
  }

  async exportAdapter(): Promise<TensorData[]> {
    return loraToTensors(this.plan, await this.parameters());
  }

  async exportOptimizerState(): Promise<OptimizerState> {
    const [m, v] = await Promise.all([readF32(this.device, this.m, this.plan.elements), readF32(this.device, this.v, this.plan.elements)]);
    return { step: this.step, tensors: [...loraToTensors(this.plan, m, EXP_AVG), ...loraToTensors(this.plan, v, EXP_AVG_SQ)] };
  }

  destroy(): void {
    for (const b of [this.params, this.grads, this.m, this.v]) b.destroy();
  }
}
