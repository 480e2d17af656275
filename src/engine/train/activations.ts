/**
 * The GPU buffers of an ActivationPlan (memory-plan.ts): one buffer per planned tensor, allocated
 * once when the session is created and sized for the plan's micro-batch capacity, never grown
 * (llm.c: a shape change after the first use is an error, not a silent reallocation; a micro-batch
 * larger than the plan is refused by the packer, micro-batches.ts).
 *
 * Not here: what the tensors hold (graph-forward.ts, graph-backward.ts).
 */
import type { ActivationPlan, LayerTensor, ScratchTensor, TensorSpec } from './memory-plan';

export class TrainingBuffers {
  /** h[l]: the residual entering layer l (l < L). */
  readonly residual: GPUBuffer[];
  private readonly layerSets: Array<Map<string, GPUBuffer>>;
  private readonly scratch = new Map<string, GPUBuffer>();
  private readonly all: GPUBuffer[] = [];

  constructor(
    private readonly device: GPUDevice,
    readonly plan: ActivationPlan,
    numLayers: number,
  ) {
    const make = (t: TensorSpec, label: string) => {
      const b = device.createBuffer({
        label,
        size: Math.max(16, Math.ceil(t.bytes / 16) * 16),
        usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC,
      });
      this.all.push(b);
      return b;
    };
    try {
      this.residual = Array.from({ length: numLayers }, (_, l) => make(plan.residual, `train.layers.${l}.h`));
      const sets = plan.mode === 'save' ? numLayers : 1;
      this.layerSets = Array.from(
        { length: sets },
        (_, l) =>
          new Map(plan.layer.map((t) => [t.name, make(t, plan.mode === 'save' ? `train.layers.${l}.${t.name}` : `train.layer.${t.name}`)])),
      );
      for (const t of plan.scratch) this.scratch.set(t.name, make(t, `train.${t.name}`));
    } catch (e) {
      this.destroy();
      throw e;
    }
  }

  /**
   * Layer l's saved tensors ('save'), or the shared set the backward recomputes into. A tensor the
   * plan keeps as scratch for this model (qkv without q/k-norm) is the shared scratch buffer.
   */
  layer(l: number, name: LayerTensor): GPUBuffer {
    const set = this.layerSets[this.plan.mode === 'save' ? l : 0];
    const b = set.get(name) ?? this.scratch.get(name);
    if (!b) throw new Error(`training buffers: layer tensor ${name} is not in the plan (no LoRA group uses it)`);
    return b;
  }

  hasLayer(name: LayerTensor): boolean {
    return this.layerSets[0].has(name);
  }

  get(name: ScratchTensor): GPUBuffer {
    const b = this.scratch.get(name);
    if (!b) throw new Error(`training buffers: no scratch tensor ${name}`);
    return b;
  }

  get bytes(): number {
    return this.all.reduce((s, b) => s + b.size, 0);
  }

  destroy(): void {
    for (const b of this.all) b.destroy();
    this.all.length = 0;
  }
}
