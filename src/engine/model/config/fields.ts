/**
 * Reading a Hugging Face config file's fields: ConfigError (the message names the field), the typed
 * FieldReader, the caps on sizes, token id lists and torch dtype names. Every config parser
 * (hf-config.ts, hf-config-gemma3.ts, hf-rope.ts, generation-config.ts) reads through these, so
 * a bad value gets the same message whichever family's file holds it.
 */
import type { DType } from '../../tensor/dtype';

/** A config.json (or generation_config.json) that Hearth cannot use; the message names the field. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

/** A parsed JSON object. */
export type Json = Record<string, unknown>;

export const TORCH_DTYPES: Record<string, DType> = { float32: 'f32', float16: 'f16', bfloat16: 'bf16' };

/** eos_token_id may be an int, a list of ints, or absent/null. */
export function tokenIdList(value: unknown, field: string, file: string): number[] {
  if (value == null) return [];
  const list = Array.isArray(value) ? value : [value];
  for (const id of list) {
    if (!Number.isInteger(id) || (id as number) < 0) {
      throw new ConfigError(`${file}: "${field}" must be a token id or a list of token ids (got ${JSON.stringify(value)})`);
    }
  }
  return [...new Set(list as number[])];
}

/**
 * Caps on config.json sizes, far above any real model (Llama 3.1 405B has 126 layers): a hostile
 * `num_hidden_layers` of 2^53 would otherwise size per-layer arrays. README.md "Budgets for
 * untrusted files and programs" lists them.
 */
export const CONFIG_LIMITS = { int: 2 ** 31 - 1, layers: 4096 } as const;

/** Typed field access with error messages that name the field and show the bad value. */
export class FieldReader {
  constructor(
    private readonly obj: Json,
    private readonly where: string,
  ) {}

  private missing(name: string): never {
    throw new ConfigError(`${this.where}: missing required field "${name}"`);
  }

  private bad(name: string, what: string): never {
    throw new ConfigError(`${this.where}: "${name}" must be ${what} (got ${JSON.stringify(this.obj[name])})`);
  }

  /** A size or count: an integer from 1 to `max` (2^31 - 1 by default: no tensor dimension or id is larger, and
   *  1e308 is an "integer" to Number.isInteger). */
  positiveInt(name: string, fallback?: number, max = CONFIG_LIMITS.int): number {
    const v = this.obj[name];
    if (v == null) return fallback ?? this.missing(name);
    if (!Number.isInteger(v) || (v as number) <= 0) this.bad(name, 'a positive integer');
    if ((v as number) > max) this.bad(name, `at most ${max}`);
    return v as number;
  }

  /** `num_hidden_layers`: per-layer tables are built from it before any tensor is seen, so it is capped. */
  layerCount(name = 'num_hidden_layers'): number {
    return this.positiveInt(name, undefined, CONFIG_LIMITS.layers);
  }

  positiveNumber(name: string, fallback?: number): number {
    const v = this.obj[name];
    if (v == null) return fallback ?? this.missing(name);
    if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) this.bad(name, 'a positive number');
    return v;
  }

  optionalNumber(name: string, min = -Infinity): number | undefined {
    const v = this.obj[name];
    if (v == null) return undefined;
    if (typeof v !== 'number' || !Number.isFinite(v) || v < min) this.bad(name, `a number >= ${min}`);
    return v;
  }

  optionalInt(name: string, min = 0): number | undefined {
    const v = this.obj[name];
    if (v == null) return undefined;
    if (!Number.isInteger(v) || (v as number) < min) this.bad(name, `an integer >= ${min}`);
    return v as number;
  }

  bool(name: string, fallback: boolean): boolean {
    const v = this.obj[name];
    if (v == null) return fallback;
    if (typeof v !== 'boolean') this.bad(name, 'true or false');
    return v;
  }

  tokenIdOrNull(name: string): number | null {
    const v = this.obj[name];
    if (v == null) return null;
    // A few configs carry a list here too; the first id is the one that is prepended.
    if (Array.isArray(v)) return tokenIdList(v, name, this.where)[0] ?? null;
    if (!Number.isInteger(v) || (v as number) < 0) this.bad(name, 'a token id');
    return v as number;
  }
}
