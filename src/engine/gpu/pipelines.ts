/**
 * Compute pipeline cache. A kernel's WGSL text plus its `override` constants fully determine a
 * pipeline, so that pair is the key (tfjs-webgpu's makeShaderKey idea: key on exactly what is
 * baked in). Sizes travel in uniforms, so one pipeline serves every shape.
 *
 * HEARTH_PRINT_SHADER=<label substring> (env in Node, globalThis.HEARTH_PRINT_SHADER in a page)
 * dumps the WGSL of matching kernels when they are first compiled.
 */

export interface PipelineSpec {
  /** Kernel name, e.g. "rmsnorm.forward"; becomes the GPU object label. */
  label: string;
  code: string;
  entryPoint: string;
  layout: GPUPipelineLayout;
  /** WGSL `override` constants (workgroup and tile sizes). */
  constants?: Record<string, number>;
}

function printFilter(): string | undefined {
  const g = globalThis as { HEARTH_PRINT_SHADER?: string; process?: { env?: Record<string, string | undefined> } };
  return g.HEARTH_PRINT_SHADER ?? g.process?.env?.HEARTH_PRINT_SHADER;
}

export class PipelineCache {
  private readonly pipelines = new Map<string, GPUComputePipeline>();
  private readonly modules = new Map<string, GPUShaderModule>();
  private readonly layoutIds = new WeakMap<GPUPipelineLayout, number>();
  private nextLayoutId = 0;

  constructor(private readonly device: GPUDevice) {}

  get size(): number {
    return this.pipelines.size;
  }

  get(spec: PipelineSpec): GPUComputePipeline {
    const constants = spec.constants ?? {};
    const constKey = Object.keys(constants)
      .sort()
      .map((k) => `${k}=${constants[k]}`)
      .join(',');
    let layoutId = this.layoutIds.get(spec.layout);
    if (layoutId === undefined) this.layoutIds.set(spec.layout, (layoutId = this.nextLayoutId++));
    const key = `${spec.entryPoint}|${constKey}|${layoutId}|${spec.code}`;
    let pipeline = this.pipelines.get(key);
    if (!pipeline) {
      pipeline = this.device.createComputePipeline({
        label: spec.label,
        layout: spec.layout,
        compute: { module: this.module(spec.label, spec.code), entryPoint: spec.entryPoint, constants },
      });
      this.pipelines.set(key, pipeline);
    }
    return pipeline;
  }

  private module(label: string, code: string): GPUShaderModule {
    let module = this.modules.get(code);
    if (!module) {
      const filter = printFilter();
      if (filter && label.includes(filter)) console.log(`// ---- ${label} ----\n${code}`);
      module = this.device.createShaderModule({ label, code });
      this.modules.set(code, module);
      // WGSL errors surface asynchronously; say which kernel they belong to.
      void module.getCompilationInfo?.().then((info) => {
        for (const m of info.messages) {
          if (m.type === 'error') console.error(`WGSL error in ${label} at ${m.lineNum}:${m.linePos}: ${m.message}`);
        }
      });
    }
    return module;
  }
}
