/**
 * Printing and recording `npm run bench` results: the generation figures as a markdown table, and
 * `--record`, which writes each run's tables into docs/performance.md under a heading naming the
 * runtime and the adapter (replacing the previous run of the same runtime and adapter).
 *
 * Node only (file access). Not here: measuring (generation.ts, train.ts).
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import type { GenerationBenchResult } from './generation';

const mib = (b: number) => `${(b / 2 ** 20).toFixed(b < 2 ** 20 ? 2 : 0)} MiB`;

export function generationTable(results: GenerationBenchResult[]): string {
  const batches = [...new Set(results.flatMap((r) => r.decode.map((d) => d.batch)))].sort((a, b) => a - b);
  const head = [
    'model',
    'layers',
    'parameters',
    'prompt',
    'TTFT ms',
    'prefill tok/s',
    ...batches.map((b) => `decode tok/s B=${b}`),
    ...batches.map((b) => `dispatches / layer B=${b}`),
    'submissions / step',
    'read back / seq / step',
    'GPU memory',
    'of bandwidth limit (B=1)',
  ];
  const rows = results.map((r) => {
    const at = (b: number) => r.decode.find((d) => d.batch === b);
    const d1 = at(1);
    return [
      r.model,
      r.layers === r.totalLayers ? `${r.layers}` : `${r.layers} of ${r.totalLayers}`,
      `${(r.parameters / 1e6).toFixed(1)}M`,
      `${r.promptTokens}`,
      r.ttftMs.toFixed(0),
      r.prefillTokensPerSecond.toFixed(1),
      ...batches.map((b) => at(b)?.tokensPerSecond.toFixed(1) ?? '-'),
      ...batches.map((b) => (at(b) ? `${at(b)!.dispatchesPerLayer} (${at(b)!.graph.replace('decode-', '')})` : '-')),
      Math.max(...r.decode.map((d) => d.submissionsPerStep)).toFixed(2),
      `${Math.max(...r.decode.map((d) => d.readbackBytesPerSequence))} B`,
      `${mib(r.gpuBytes.total)} (weights ${mib(r.gpuBytes.weights)}, KV ${mib(r.gpuBytes.kvCache)}, steps ${mib(r.gpuBytes.activations)})`,
      d1?.bandwidthRatio == null ? 'n/a (bandwidth unknown)' : `${(100 * d1.bandwidthRatio).toFixed(1)} %`,
    ];
  });
  return [`| ${head.join(' | ')} |`, `|${head.map(() => '---').join('|')}|`, ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');
}

/**
 * Decode with LoRA adapters (`--lora-rank`): one row per model and batch, every request under one
 * adapter, beside the same run's decode without adapters; the graph that ran, its dispatches per
 * layer, and the general LoRA graph's (what LoRA rows cost where the fused variants do not run).
 */
export function loraDecodeTable(results: GenerationBenchResult[]): string {
  const head = [
    'model',
    'layers',
    'adapter',
    'batch',
    'decode tok/s',
    'ms / step',
    'without LoRA tok/s',
    'graph',
    'dispatches / layer',
    'general LoRA graph dispatches / layer',
  ];
  const rows = results.flatMap((r) =>
    (r.loraDecode ?? []).map((d) => [
      r.model,
      r.layers === r.totalLayers ? `${r.layers}` : `${r.layers} of ${r.totalLayers}`,
      `LoRA rank ${d.rank}, ${d.modules.length === 7 ? 'all seven projections' : d.modules.join(', ')}`,
      `${d.batch}`,
      d.tokensPerSecond.toFixed(1),
      d.stepMs.toFixed(1),
      r.decode.find((x) => x.batch === d.batch)?.tokensPerSecond.toFixed(1) ?? '-',
      d.graph,
      `${d.dispatchesPerLayer}`,
      `${d.generalDispatchesPerLayer}`,
    ]),
  );
  return [`| ${head.join(' | ')} |`, `|${head.map(() => '---').join('|')}|`, ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');
}

/**
 * The quantized section: each shape in bf16 and GGML block formats side by side (issue 11): decode
 * at batch 1, the weight bytes a decoded token reads, GPU memory, and on a GPU of known bandwidth the
 * fraction of the bandwidth limit (those bytes / bandwidth over the step time).
 */
export function quantizedTable(results: GenerationBenchResult[]): string {
  const head = [
    'model',
    'format',
    'layers',
    'decode tok/s B=1',
    'ms / step',
    'prefill tok/s',
    'weight bytes / token',
    'GPU memory',
    'of bandwidth limit (B=1)',
  ];
  const rows = results.map((r) => {
    const [shape, format = 'bf16'] = r.model.split('@', 2);
    const d1 = r.decode.find((d) => d.batch === 1);
    return [
      shape,
      format,
      r.layers === r.totalLayers ? `${r.layers}` : `${r.layers} of ${r.totalLayers}`,
      d1?.tokensPerSecond.toFixed(1) ?? '-',
      d1?.stepMs.toFixed(1) ?? '-',
      r.prefillTokensPerSecond.toFixed(1),
      mib(r.weightBytesPerToken),
      `${mib(r.gpuBytes.total)} (weights ${mib(r.gpuBytes.weights)})`,
      d1?.bandwidthRatio == null ? 'n/a (bandwidth unknown)' : `${(100 * d1.bandwidthRatio).toFixed(1)} %`,
    ];
  });
  return [`| ${head.join(' | ')} |`, `|${head.map(() => '---').join('|')}|`, ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');
}

export interface RecordedRun {
  runtime: 'node' | 'chromium';
  device: string;
  date: string;
  command: string;
  tables: Array<{ title: string; markdown: string }>;
}

/**
 * Writes (or replaces) the run's tables in docs/performance.md: one block per (runtime, adapter,
 * table), so runs of different sections (generation, training) on one adapter live side by side.
 */
export function recordRun(path: string, run: RecordedRun): void {
  let text = existsSync(path) ? readFileSync(path, 'utf8') : '# Performance\n\n## Measured runs\n\n';
  for (const t of run.tables) {
    const key = `${run.runtime}:${run.device}:${t.title}`.replace(/[^\w:./ ()-]/g, '');
    const start = `<!-- bench ${key} -->`;
    const end = `<!-- /bench ${key} -->`;
    const body = [
      start,
      `### ${t.title}: ${run.runtime === 'node' ? 'Node (Dawn)' : 'Chromium (headless)'}, ${run.device}`,
      '',
      `${run.date}, \`${run.command}\``,
      '',
      t.markdown,
      end,
    ].join('\n');
    const i = text.indexOf(start);
    const j = text.indexOf(end);
    if (i >= 0 && j > i) text = text.slice(0, i) + body + text.slice(j + end.length);
    else text = `${text.trimEnd()}\n\n${body}\n`;
  }
  writeFileSync(path, text);
}
