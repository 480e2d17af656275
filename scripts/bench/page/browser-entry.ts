// The bench in a Chromium page: the same sections as in Node, on navigator.gpu. Exposes
// `window.hearthBench(options)`, called by scripts/bench/chromium.ts; progress lines go to the console.
import { acquireGpu } from '../../../src/engine/gpu/device';
import { runGenerationBench, type GenerationBenchOptions } from '../generation';
import { runTrainingBench, type TrainBenchOptions } from '../train';

export interface PageBenchOptions {
  generation: GenerationBenchOptions | null;
  training: TrainBenchOptions | null;
}

async function hearthBench(options: PageBenchOptions) {
  const gpu = await acquireGpu(navigator.gpu);
  const log = (line: string) => console.log(line);
  const generation = options.generation
    ? await runGenerationBench(gpu, { ...options.generation, baseUrl: location.origin + '/' }, log)
    : [];
  const training = options.training ? await runTrainingBench(gpu, options.training, log) : [];
  return { device: gpu.description.adapter, generation, training };
}

(window as unknown as { hearthBench: typeof hearthBench }).hearthBench = hearthBench;
