/**
 * Where each weight matrix and vector of a model goes on the GPU, from the config alone, so tensors
 * can be written as they arrive, one at a time (the loader streams them), and a matrix is created
 * when its parts tell its dtype. WeightSet (weight-set.ts) follows this layout.
 */
import type { ModelConfig } from '../config/model-config';
import { rotaryDim } from '../config/rope';
import { EMBED_NAME, FINAL_NORM_NAME, LM_HEAD_NAME, layerNames } from './parameter-plan';

/** Elements (f32) a vector group is aligned to: 256 bytes, the storage binding offset alignment. */
export const VECTOR_ALIGN = 64;

/** A matrix of the set: its label, shape, and the HF tensors stored in it as row ranges. */
export interface MatrixPlan {
  label: string;
  rows: number;
  cols: number;
  parts: Array<{ name: string; rowStart: number }>;
}

/**
 * Where each matrix and vector goes, from the config alone: so tensors can be written as they arrive,
 * one at a time (the loader streams them), and a matrix is created when its parts tell its dtype.
 */
export function planLayout(cfg: ModelConfig, ropePositions: number) {
  const C = cfg.hiddenSize;
  const HS = cfg.headDim;
  const qRows = cfg.numHeads * HS;
  const kvRows = cfg.numKvHeads * HS;
  const F = cfg.intermediateSize;
  const matrices: MatrixPlan[] = [];
  const matrix = (label: string, rows: number, cols: number, parts: Array<[string, number]>) => {
    matrices.push({ label, rows, cols, parts: parts.map(([name, rowStart]) => ({ name, rowStart })) });
    return label;
  };
  const vectorOffsets = new Map<string, number>();
  let vectorLength = ropePositions * rotaryDim(cfg); // the RoPE table comes first
  // A group of 1-D tensors stored back to back, starting on a 256-byte boundary.
  const vector = (names: string[], lengths: number[], present: boolean) => {
    if (!present) return null;
    vectorLength = Math.ceil(vectorLength / VECTOR_ALIGN) * VECTOR_ALIGN;
    const start = vectorLength;
    names.forEach((name, i) => {
      vectorOffsets.set(name, vectorLength);
      vectorLength += lengths[i];
    });
    return start;
  };
  matrix(EMBED_NAME, cfg.vocabSize, C, [[EMBED_NAME, 0]]);
  if (!cfg.tieWordEmbeddings) matrix(LM_HEAD_NAME, cfg.vocabSize, C, [[LM_HEAD_NAME, 0]]);
  const layers = Array.from({ length: cfg.numLayers }, (_, l) => {
    const n = layerNames(l);
    return {
      // A fused checkpoint (Phi-3) already holds these row blocks in one tensor each.
      qkv: matrix(
        `model.layers.${l}.qkv`,
        qRows + 2 * kvRows,
        C,
        cfg.fusedProjections
          ? [[n.qkv, 0]]
          : [
              [n.q, 0],
              [n.k, qRows],
              [n.v, qRows + kvRows],
            ],
      ),
      o: matrix(n.o, C, qRows, [[n.o, 0]]),
      gateUp: matrix(
        `model.layers.${l}.gate_up`,
        2 * F,
        C,
        cfg.fusedProjections
          ? [[n.gateUp, 0]]
          : [
              [n.gate, 0],
              [n.up, F],
            ],
      ),
      down: matrix(n.down, C, F, [[n.down, 0]]),
      inputNorm: vector([n.inputNorm], [C], true)!,
      postNorm: vector([cfg.sandwichNorms ? n.preFfnNorm : n.postNorm], [C], true)!,
      attnOutNorm: vector([n.postNorm], [C], !!cfg.sandwichNorms),
      mlpOutNorm: vector([n.postFfnNorm], [C], !!cfg.sandwichNorms),
      // Fused biases: [q; k; v] and [gate; up] read as one vector each.
      qkvBias: vector([n.qBias, n.kBias, n.vBias], [qRows, kvRows, kvRows], cfg.attentionBias),
      qNorm: vector([n.qNorm], [HS], cfg.qkNorm),
      kNorm: vector([n.kNorm], [HS], cfg.qkNorm),
      oBias: vector([n.oBias], [C], cfg.outputBias),
      gateUpBias: vector([n.gateBias, n.upBias], [F, F], cfg.mlpBias),
      downBias: vector([n.downBias], [C], cfg.mlpBias),
    };
  });
  const finalNorm = vector([FINAL_NORM_NAME], [C], true)!;
  // Gemma's sliding layers rotate with their own base: a second table, after the 1-D tensors.
  const localRope = vector(['rope.local'], [ropePositions * HS], cfg.ropeLocalTheta !== undefined);
  return { matrices, layers, finalNorm, localRope, vectorOffsets, vectorLength };
}
