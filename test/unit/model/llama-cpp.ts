// llama.cpp (node-llama-cpp's prebuilt CPU build) as the tests' independent oracle: one llama.cpp
// instance and one scratch folder per describe block (made before its tests, removed after), and the
// logits of every position of a token list for a GGUF file, on the CPU with an F32 KV cache.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getLlama, type Llama } from 'node-llama-cpp';
import { afterAll, beforeAll } from 'vitest';
import { llamaCppLogits } from './llama-cpp-oracle';

export interface LlamaCppOracle {
  /**
   * Writes `gguf` as `file` in the scratch folder and returns llama.cpp's logits (T, V) of `tokens`
   * (T <= 64), with a GGUF LoRA adapter (`--lora`) applied when given.
   */
  logits(
    gguf: Uint8Array,
    file: string,
    tokens: readonly number[],
    V: number,
    lora?: { gguf: Uint8Array; file: string },
  ): Promise<Float32Array>;
}

/** Call inside a describe block. */
export function llamaCppOracle(prefix: string): LlamaCppOracle {
  let llama: Llama | undefined;
  let dir = '';
  beforeAll(async () => {
    llama = await getLlama({ gpu: false, build: 'never', logLevel: 'error' as never });
    dir = mkdtempSync(join(tmpdir(), prefix));
  });
  afterAll(async () => {
    await llama?.dispose();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });
  return {
    async logits(gguf, file, tokens, V, lora) {
      const path = join(dir, file);
      writeFileSync(path, gguf);
      const loraPath = lora ? join(dir, lora.file) : null;
      if (lora && loraPath) writeFileSync(loraPath, lora.gguf);
      return llamaCppLogits(llama!, path, tokens, V, 64, loraPath ?? undefined);
    },
  };
}
