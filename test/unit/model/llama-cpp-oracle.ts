// llama.cpp (node-llama-cpp's prebuilt CPU build) as an oracle: the logits it computes for every
// position of a prompt on a GGUF file, and how far another set of logits is from them. Shared by the
// GGUF tests that check Hearth's reference forward (test/unit) and its GPU engine (test/gpu) against it.
import type { Llama, Token } from 'node-llama-cpp';

/** Relative RMS of (a - b) over the RMS of b, and how many rows' argmax agree. */
export function compareLogits(a: Float32Array, b: Float32Array, V: number): { rel: number; argmaxAgree: number } {
  let num = 0;
  let den = 0;
  for (let i = 0; i < a.length; i++) {
    num += (a[i] - b[i]) ** 2;
    den += b[i] ** 2;
  }
  let agree = 0;
  for (let r = 0; r < a.length / V; r++) {
    const row = (x: Float32Array) => x.subarray(r * V, (r + 1) * V);
    const arg = (x: Float32Array) => x.indexOf(Math.max(...x));
    if (arg(row(a)) === arg(row(b))) agree++;
  }
  return { rel: Math.sqrt(num / den), argmaxAgree: agree };
}

/** llama.cpp's logits of every position of `prompt` for the GGUF at `path` (CPU, 2 threads, F32 KV cache), in a
 *  context of `contextSize` tokens (Phi-3's LongRoPE picks its factors by it), with the GGUF LoRA
 *  adapter at `lora` applied when given. */
export async function llamaCppLogits(
  llama: Llama,
  path: string,
  prompt: readonly number[],
  V: number,
  contextSize = 64,
  lora?: string,
): Promise<Float32Array> {
  const model = await llama.loadModel({ modelPath: path, gpuLayers: 0, useMmap: false });
  const ctx = await model.createContext({
    contextSize,
    batchSize: contextSize,
    threads: 2,
    experimentalKvCacheKeyType: 'F32',
    experimentalKvCacheValueType: 'F32',
    ...(lora ? { lora: { adapters: [{ filePath: lora }] } } : {}),
  });
  const seq = ctx.getSequence();
  const out = await seq.controlledEvaluate(prompt.map((t) => [t as Token, { generateNext: { logits: true } }] as const));
  const theirs = new Float32Array(prompt.length * V);
  out.forEach((o, i) => {
    for (const [token, logit] of o!.next.logits!) theirs[i * V + (token as number)] = logit;
  });
  await ctx.dispose();
  await model.dispose();
  return theirs;
}
