/**
 * What the model loader learnt of a base model's files, as its record keeps it: the same fields
 * for a finished download (downloads.ts) and a validated upload (uploaded-model.ts).
 */
import type { LoadedModelFiles } from '../../engine/model/files/repo';
import type { BaseModelRecord } from '../../store/schema';

export function recordSummary(
  files: LoadedModelFiles,
): Pick<BaseModelRecord, 'architecture' | 'parameters' | 'bytes' | 'gpuBytes' | 'maxPositionEmbeddings' | 'warnings'> {
  const parameters = files.weights.reduce((s, w) => s + w.shape.reduce((p, d) => p * d, 1), 0);
  return {
    architecture: files.config.arch,
    parameters,
    bytes: files.fileWeightBytes ?? files.weightBytes,
    gpuBytes: files.weightBytes,
    maxPositionEmbeddings: files.config.maxPositionEmbeddings,
    warnings: files.warnings ?? [],
  };
}
