/**
 * A LoRA adapter's hyperparameters as PEFT's adapter_config.json holds them, and the scale they
 * give the low-rank update (y += s * (x A^T) B^T).
 */

/** adapter_config.json fields the engine uses (PEFT names in comments). */
export interface LoraConfig {
  /** `r` */
  rank: number;
  /** `lora_alpha`; the scale is alpha / r (alpha / sqrt(r) with rsLoRA). */
  alpha: number;
  /** `target_modules`: short module names, e.g. ["q_proj", "v_proj"]. */
  targetModules: string[];
  /** `use_rslora` */
  useRslora: boolean;
}

/** s = alpha / r, or alpha / sqrt(r) with rsLoRA (PEFT `use_rslora`). */
export function loraScale(alpha: number, rank: number, useRslora: boolean): number {
  return useRslora ? alpha / Math.sqrt(rank) : alpha / rank;
}
