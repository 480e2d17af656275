/**
 * RoPE base and scaling of a Hugging Face config.json: transformers 4.x's `rope_theta` +
 * `rope_scaling` and transformers 5's `rope_parameters`, "default", "linear", "llama3" and
 * "longrope" (Phi-3's "su"); anything else is refused with a ConfigError. Used by hf-config.ts and
 * hf-config-gemma3.ts (per layer type).
 * Not here: the rotation itself (rope.ts).
 */
import { ConfigError, FieldReader, type Json } from './fields';
import type { RopeScaling } from './model-config';

/**
 * RoPE base and scaling. transformers 4.x: `rope_theta` + `rope_scaling` ({type|rope_type, ...});
 * transformers 5: `rope_parameters` ({rope_type, rope_theta, ...}). "default" means no scaling.
 */
export function ropeOf(
  c: Json,
  file: string,
  defaultTheta: number,
  dims: { rotaryDim: number; maxPositionEmbeddings: number },
): { theta: number; scaling: RopeScaling | null } {
  const params = c.rope_parameters ?? c.rope_scaling;
  const key = c.rope_parameters != null ? 'rope_parameters' : 'rope_scaling';
  if (params != null && (typeof params !== 'object' || Array.isArray(params))) {
    throw new ConfigError(`${file}: "${key}" must be an object or null`);
  }
  const p = (params ?? {}) as Json;
  const pf = new FieldReader(p, `${file}: "${key}"`);
  const theta =
    p.rope_theta != null ? pf.positiveNumber('rope_theta') : new FieldReader(c, file).positiveNumber('rope_theta', defaultTheta);
  if (params == null) return { theta, scaling: null };
  const type = p.rope_type ?? p.type ?? 'default';
  switch (type) {
    case 'default':
      return { theta, scaling: null };
    case 'linear':
      return { theta, scaling: { type: 'linear', factor: pf.positiveNumber('factor') } };
    case 'llama3':
      return {
        theta,
        scaling: {
          type: 'llama3',
          factor: pf.positiveNumber('factor'),
          lowFreqFactor: pf.positiveNumber('low_freq_factor'),
          highFreqFactor: pf.positiveNumber('high_freq_factor'),
          originalMaxPositionEmbeddings: pf.positiveInt('original_max_position_embeddings'),
        },
      };
    case 'longrope':
    case 'su': // Phi-3's first name for longrope
      return { theta, scaling: longRopeOf(c, p, pf, file, key, dims) };
    default:
      throw new ConfigError(
        `${file}: "${key}" type ${JSON.stringify(type)} is not supported; Hearth supports "default", "linear", "llama3" and "longrope"`,
      );
  }
}

/**
 * LongRoPE as transformers' `_compute_longrope_parameters`: original_max_position_embeddings from the
 * rope parameters (5) or the top level (Phi-3's 4.x files); factor = max / original unless given;
 * attention_factor = sqrt(1 + ln(factor) / ln(original)) when factor > 1 unless given, else 1.
 */
function longRopeOf(
  c: Json,
  p: Json,
  pf: FieldReader,
  file: string,
  key: string,
  dims: { rotaryDim: number; maxPositionEmbeddings: number },
): RopeScaling {
  const original =
    p.original_max_position_embeddings != null
      ? pf.positiveInt('original_max_position_embeddings')
      : new FieldReader(c, file).positiveInt('original_max_position_embeddings', dims.maxPositionEmbeddings);
  const factors = (name: string): number[] => {
    const v = p[name];
    const ok = Array.isArray(v) && v.length === dims.rotaryDim / 2 && v.every((x) => typeof x === 'number' && Number.isFinite(x) && x > 0);
    if (!ok)
      throw new ConfigError(`${file}: "${key}.${name}" must list ${dims.rotaryDim / 2} positive numbers (one per rotated frequency)`);
    return v as number[];
  };
  const factor = pf.optionalNumber('factor', 0) ?? dims.maxPositionEmbeddings / original;
  const given = pf.optionalNumber('attention_factor', 0);
  const attentionFactor = given ?? (factor <= 1 ? 1 : Math.sqrt(1 + Math.log(factor) / Math.log(original)));
  return {
    type: 'longrope',
    shortFactor: factors('short_factor'),
    longFactor: factors('long_factor'),
    originalMaxPositionEmbeddings: original,
    attentionFactor,
  };
}
