/**
 * What a GGUF family mapper (gguf-families.ts, gguf-gemma3.ts) works with: the reader of a number
 * under the file's `{arch}.` prefix, and the ModelConfig fields a family sets beyond the shared keys
 * that gguf-model.ts reads.
 */
import type { ModelConfig } from '../config/model-config';

export type NumberKey = (key: string, fallback?: number) => number;

/** The fields of a ModelConfig a family sets: rotaryDim, ropeLayers, fusedProjections, the sliding window, Gemma's. */
export type FamilyFields = Pick<
  ModelConfig,
  | 'rotaryDim'
  | 'ropeLayers'
  | 'fusedProjections'
  | 'slidingWindow'
  | 'layerTypes'
  | 'hiddenAct'
  | 'normWeightOffset'
  | 'embeddingScale'
  | 'sandwichNorms'
  | 'attentionScale'
  | 'ropeLocalTheta'
>;
