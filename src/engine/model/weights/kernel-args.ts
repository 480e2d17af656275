/**
 * What a model hands its kernels, resolved from its config and its WeightSet: the kernels take plain
 * shapes, packed matrices, vector bindings and flags (docs/style.md "For Hearth"; kernels import nothing
 * from model/), and the generation and training graphs build those here, once per model or layer.
 *
 * Not here: the kernels (../kernels), the graphs that place their calls (generate/, train/).
 */
import type { DecodeShape } from '../../kernels/decode-stream';
import type { LmHeadWeights } from '../../kernels/lm-head';
import type { QkvPrepLayerArgs, QkvPrepShape } from '../../kernels/qkv-prep';
import type { ModelConfig } from '../config/model-config';
import { layerUsesRope, rotaryDim } from '../config/rope';
import type { WeightSet } from './weight-set';

/** The attention family's shape: heads, head dim, q/k norm and rotated dims. */
export function attentionShapeOf(cfg: ModelConfig): QkvPrepShape {
  return {
    NH: cfg.numHeads,
    NKV: cfg.numKvHeads,
    HS: cfg.headDim,
    // WeightSet keeps 1-D tensors (q_norm, k_norm) as f32 in its vectors buffer.
    qkNorm: cfg.qkNorm ? { dtype: 'f32', eps: cfg.rmsNormEps } : null,
    rotaryDim: rotaryDim(cfg),
  };
}

/** The fused decode kernels' shape. */
export function decodeShapeOf(cfg: ModelConfig): DecodeShape {
  return {
    C: cfg.hiddenSize,
    F: cfg.intermediateSize,
    NH: cfg.numHeads,
    NKV: cfg.numKvHeads,
    HS: cfg.headDim,
    rotaryDim: rotaryDim(cfg),
    qkNorm: cfg.qkNorm,
    eps: cfg.rmsNormEps,
    sandwich: !!cfg.sandwichNorms,
    act: cfg.hiddenAct,
  };
}

/** Layer l's q_norm, k_norm, RoPE table and RoPE flag as qkv-prep (and its backward) bind them. */
export function qkvPrepWeights(weights: WeightSet, layer: number): Pick<QkvPrepLayerArgs, 'qNorm' | 'kNorm' | 'ropeTable' | 'rope'> {
  const w = weights.layers[layer];
  const HS = weights.config.headDim;
  return {
    qNorm: w.qNorm === null ? undefined : weights.vectorBinding(w.qNorm, HS),
    kNorm: w.kNorm === null ? undefined : weights.vectorBinding(w.kNorm, HS),
    ropeTable: weights.ropeTableOf(layer),
    rope: layerUsesRope(weights.config, layer),
  };
}

/** Layer l's inputs to the fused decode kernels (o_proj, mlp) besides the step's buffers: the shape, its weights, the vectors. */
export function decodeLayerArgs(weights: WeightSet, layer: number) {
  return { shape: decodeShapeOf(weights.config), layer: weights.layers[layer], vectors: weights.vectors };
}

/** decode.qkv's: decodeLayerArgs, and the layer's RoPE table (its offset in the vectors, its size) and RoPE flag. */
export function decodeQkvArgs(weights: WeightSet, layer: number) {
  return {
    ...decodeLayerArgs(weights, layer),
    ropeOffset: weights.ropeOffsetOf(layer),
    ropePositions: weights.ropePositions,
    rope: layerUsesRope(weights.config, layer),
  };
}

/** The lm_head as LmHead reads it. */
export function lmHeadWeights(weights: WeightSet): LmHeadWeights {
  const cfg = weights.config;
  return {
    lmHead: weights.lmHead,
    vectors: weights.vectors,
    finalNorm: weights.finalNorm,
    C: cfg.hiddenSize,
    V: cfg.vocabSize,
    eps: cfg.rmsNormEps,
  };
}
