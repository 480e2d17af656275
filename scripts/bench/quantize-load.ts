/**
 * The quantize-on-load figures of the quantized bench section (issue 11): weights per second made into
 * Q8_0 and Q4_K blocks from a bf16 tensor, on the GPU as the engine loads a model
 * (model/quant/quantize-upload.ts: the upload of the source, the kernel, waiting for it) and, for
 * comparison, by the TypeScript quantizer that is its reference (model/quant/quantize.ts, one thread).
 * The tensor is a Qwen2.5-0.5B MLP matrix in shape ([4864, 896] -> 896 is not whole Q4_K blocks, so
 * [4864, 1024] is used: whole blocks of both formats); a software adapter gets 256 of its rows.
 *
 * Not here: the decode measurements of the section (generation.ts), the table (report.ts).
 */
import { createKernelContext } from '../../src/engine/gpu/context';
import type { GpuContext } from '../../src/engine/gpu/device';
import { PackedMatrix } from '../../src/engine/gpu/packed-tensor';
import { tensorFromF32, tensorToF32 } from '../../src/engine/tensor/tensor-data';
import { quantize } from '../../src/engine/model/quant/quantize';
import { QUANTIZE_TARGETS, type QuantizeTarget } from '../../src/engine/tensor/dtype';
import { GpuQuantizer } from '../../src/engine/model/quant/quantize-upload';
import { Rng } from '../../src/engine/tensor/random';

export interface QuantizeLoadBenchResult {
  format: QuantizeTarget;
  source: 'bf16';
  shape: [number, number];
  /** Weights per second on the GPU (upload + kernel + wait), median of the repetitions. */
  gpuWeightsPerSecond: number;
  /** Weights per second of the TypeScript quantizer on this machine's CPU (one thread). */
  cpuWeightsPerSecond: number;
}

const COLS = 1024;

export async function runQuantizeLoadBench(gpu: GpuContext, opts: { quick?: boolean }, log: (line: string) => void) {
  const quick = opts.quick ?? gpu.description.adapter.isSoftware;
  const rows = quick ? 256 : 4864;
  const ctx = createKernelContext(gpu);
  const quantizer = new GpuQuantizer(ctx);
  const t = tensorFromF32('bench.weight', [rows, COLS], new Rng(5).normals(rows * COLS, 0.02), 'bf16');
  const n = rows * COLS;
  const results: QuantizeLoadBenchResult[] = [];
  for (const format of QUANTIZE_TARGETS) {
    const m = new PackedMatrix(ctx.device, {
      label: `bench.${format}`,
      dtype: format,
      rows,
      cols: COLS,
      chunkBytes: ctx.maxStorageBindingSize,
    });
    try {
      await quantizer.writeRows(m, 0, t, format); // compiles the pipeline
      const times: number[] = [];
      for (let i = 0; i < (quick ? 2 : 5); i++) {
        const t0 = performance.now();
        await quantizer.writeRows(m, 0, t, format);
        times.push(performance.now() - t0);
      }
      times.sort((a, b) => a - b);
      const gpuMs = times[times.length >> 1];
      const x = tensorToF32(t);
      const c0 = performance.now();
      quantize(format, x);
      const cpuMs = performance.now() - c0;
      results.push({
        format,
        source: 'bf16',
        shape: [rows, COLS],
        gpuWeightsPerSecond: n / (gpuMs / 1000),
        cpuWeightsPerSecond: n / (cpuMs / 1000),
      });
      log(`bench: quantize on load ${format}: GPU ${gpuMs.toFixed(1)} ms, CPU ${cpuMs.toFixed(1)} ms for ${n} weights`);
    } finally {
      m.destroy();
    }
  }
  return results;
}

/** The table of the quantize-on-load figures. */
export function quantizeLoadTable(results: QuantizeLoadBenchResult[]): string {
  const head = ['format', 'source', 'tensor', 'GPU M weights/s', 'TypeScript (CPU) M weights/s', 'GPU / CPU'];
  const rows = results.map((r) => [
    r.format,
    r.source,
    `[${r.shape.join(', ')}]`,
    (r.gpuWeightsPerSecond / 1e6).toFixed(1),
    (r.cpuWeightsPerSecond / 1e6).toFixed(1),
    `${(r.gpuWeightsPerSecond / r.cpuWeightsPerSecond).toFixed(1)}x`,
  ]);
  return [`| ${head.join(' | ')} |`, `|${head.map(() => '---').join('|')}|`, ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');
}
