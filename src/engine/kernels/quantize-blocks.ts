/**
 * QuantizeBlocks: float rows (f32, f16 or bf16, as in the file) -> Q8_0 or Q4_K blocks written into
 * one chunk of a PackedMatrix (quantize-q8_0.wgsl, quantize-q4_k.wgsl over quantize-common.wgsl), so
 * a safetensors model quantized on load costs an upload and a few dispatches instead of minutes of
 * JavaScript. The source rows sit back to back from element 0 of their binding (their packed layout:
 * rows are whole blocks, so multiples of 8 elements). Reference: model/quant/quantize.ts (Q8_0 the same
 * bytes; Q4_K the same algorithm in f32). The staging and slicing around it: model/quant/quantize-upload.ts.
 */
import type { BufferRef, KernelCall } from '../gpu/kernel-call';
import type { DType } from '../tensor/dtype';
import { checkDim, checkElements, grid, SpecKernel } from './spec-kernel';
import common from './quantize-common.wgsl?raw';
import q4k from './quantize-q4_k.wgsl?raw';
import q8 from './quantize-q8_0.wgsl?raw';
import { packed, params, rw, type KernelSpec } from './spec';

export const QUANTIZE_SPEC: KernelSpec = {
  name: 'quantize',
  bindings: {
    src: packed('X', 'rows [rows, cols] of floats in the file dtype, back to back from element 0'),
    out: rw('OUT', 'u32', 'blocks: row r at word out_off + r * out_stride (a PackedMatrix chunk)'),
  },
  uniforms: params('rows cols out_off out_stride'),
  shaders: { q8_0: [common, q8], q4_k: [common, q4k] },
};

/** The block types this kernel writes (one WGSL file each; model/quant/quantize.ts's QuantizeTarget names the same). */
export type QuantizeBlockType = Extract<DType, 'q8_0' | 'q4_k'>;

/** Values per block, and invocations per workgroup (both WGSL files use 64). */
const BLOCK: Record<QuantizeBlockType, number> = { q8_0: 32, q4_k: 256 };
const WG = 64;

export interface QuantizeArgs {
  /** The destination chunk: `rows` rows of `outStride` words from word `outOffset`. */
  out: BufferRef;
  outOffset: number;
  outStride: number;
  /** The source rows, `srcDtype` (f32, f16 or bf16), back to back. */
  src: BufferRef;
  srcDtype: DType;
  dtype: QuantizeBlockType;
  rows: number;
  cols: number;
}

export class QuantizeBlocks extends SpecKernel.of(QUANTIZE_SPEC) {
  encode(a: QuantizeArgs): KernelCall[] {
    const label = `quantize.${a.srcDtype}.${a.dtype}`;
    if (a.srcDtype !== 'f32' && a.srcDtype !== 'f16' && a.srcDtype !== 'bf16')
      throw new Error(`${label}: the source is not f32, f16 or bf16`);
    checkDim(label, 'rows', a.rows);
    checkDim(label, 'cols', a.cols);
    if (a.cols % BLOCK[a.dtype] !== 0) throw new Error(`${label}: ${a.cols} columns are not whole blocks of ${BLOCK[a.dtype]}`);
    // Q8_0 rows are pairs of 34-byte blocks (17 words); Q4_K rows 36 words per block.
    const rowWords = a.dtype === 'q8_0' ? Math.ceil(a.cols / 64) * 17 : (a.cols / 256) * 36;
    if (a.outStride < rowWords) throw new Error(`${label}: a row is ${rowWords} words, the stride ${a.outStride}`);
    checkElements(label, 'out', a.out, a.outOffset + (a.rows - 1) * a.outStride + rowWords);
    checkElements(label, 'src', a.src, (a.rows * a.cols * (a.srcDtype === 'f32' ? 4 : 2)) / 4);
    const invocations = a.dtype === 'q8_0' ? a.rows * Math.ceil(a.cols / 64) : (a.rows * a.cols) / 32;
    return [
      this.call({
        label,
        pipeline: this.pipeline({ label, variant: a.dtype, weights: { X: a.srcDtype } }),
        buffers: { src: a.src, out: a.out },
        uniforms: { rows: a.rows, cols: a.cols, out_off: a.outOffset, out_stride: a.outStride },
        workgroups: grid(this.ctx, Math.ceil(invocations / WG)),
      }),
    ];
  }
}
