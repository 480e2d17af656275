/**
 * Deterministic randomness for training plans: a job's step order and LoRA initialisation seed
 * come from its id, so the host that resumes a job after a crash replays the same plan.
 *
 * Not here: anything cryptographic (ids.ts), the generator itself (engine/tensor/random.ts).
 */
import { mulberry32 } from '../../engine/tensor/random';

/** FNV-1a hash of a string to 32 bits. */
export function seedOf(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

/** A Fisher-Yates shuffle of a copy of `items`, seeded by `seed`. */
export function seededShuffle<T>(items: readonly T[], seed: string): T[] {
  const out = items.slice();
  const rand = mulberry32(seedOf(seed));
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}
