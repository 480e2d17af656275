/**
 * The kernel families of the engine, built once per KernelContext (STYLE.md "For Hearth" 4: one list
 * registers every kernel). Each wrapper compiles its pipelines lazily through the context's cache, so
 * building the set is cheap; graphs (prefill, decode, training) take what they need from it.
 *
 * Dense families (this list): GEMM (prefill / training matmul), GEMV (decode linear), the fused
 * decode layer kernels, norms, activations, embedding and lm_head. The attention (attention-*.ts,
 * qkv-prep.ts) and sampler (sampler*.ts, logprobs.ts) families are built next to these by the
 * generation core.
 */
import type { KernelContext } from '../gpu/context';
import { AddInto } from './add';
import { DecodeFinalize } from './decode-finalize';
import { DecodeMlp } from './decode-mlp';
import { DecodeOProj } from './decode-o-proj';
import { DecodeQkv } from './decode-qkv';
import { Embedding } from './embedding';
import { Gemm } from './gemm';
import { Gemv } from './gemv';
import { LmHead } from './lm-head';
import { RmsNorm } from './rmsnorm';
import { SwiGlu } from './swiglu';

export interface DenseKernels {
  gemm: Gemm;
  gemv: Gemv;
  rmsnorm: RmsNorm;
  swiglu: SwiGlu;
  add: AddInto;
  embedding: Embedding;
  lmHead: LmHead;
  decodeQkv: DecodeQkv;
  decodeOProj: DecodeOProj;
  decodeMlp: DecodeMlp;
  decodeFinalize: DecodeFinalize;
}

export function createDenseKernels(ctx: KernelContext): DenseKernels {
  return {
    gemm: new Gemm(ctx),
    gemv: new Gemv(ctx),
    rmsnorm: new RmsNorm(ctx),
    swiglu: new SwiGlu(ctx),
    add: new AddInto(ctx),
    embedding: new Embedding(ctx),
    lmHead: new LmHead(ctx),
    decodeQkv: new DecodeQkv(ctx),
    decodeOProj: new DecodeOProj(ctx),
    decodeMlp: new DecodeMlp(ctx),
    decodeFinalize: new DecodeFinalize(ctx),
  };
}
