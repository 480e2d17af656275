// The agreement test of issue 15 item 1: every registered kernel family's WGSL agrees with its spec
// (src/engine/kernels/spec.ts). The shader text no longer declares what the spec declares, it uses
// every binding and only the uniform fields the spec names, and it does not reach for another
// family's binding it does not declare itself. Plus the named packing rules, on the real specs.
import { describe, expect, it } from 'vitest';
import { KERNEL_SPECS } from '../../../src/engine/kernels/registry';
import {
  bindingNumbers,
  entryBindings,
  packUniformValues,
  packStructs,
  params,
  storageStructs,
  wgslDeclarations,
  type KernelSpec,
} from '../../../src/engine/kernels/spec';
import { DECODE_ATTENTION_SPEC } from '../../../src/engine/kernels/attention-decode';
import { DECODE_QKV_SPEC } from '../../../src/engine/kernels/decode-qkv';
import { GEMM_SPEC } from '../../../src/engine/kernels/gemm';
import { BATCH_ROW, NO_ADAPTER, packBatchRows } from '../../../src/engine/kernels/kv-layout';
import { LORA_GRAD_SPEC } from '../../../src/engine/kernels/lora-grad';
import { QKV_PREP_SPEC } from '../../../src/engine/kernels/qkv-prep';
import { RMSNORM_SPEC } from '../../../src/engine/kernels/rmsnorm';
import { SAMPLER_DRAW_SPEC } from '../../../src/engine/kernels/sampler-specs';

/** WebGPU's default maxStorageBuffersPerShaderStage: every entry point must fit it. */
const DEFAULT_STORAGE_LIMIT = 8;
/** What Chrome's adapters offer (its limit tiers): the most any spec may declare. */
const CHROME_STORAGE_LIMIT = 10;

/** Consts the wrapper bakes in (composeShader `consts`) that share a name with another family's binding. */
const CONSTS_NAMED_LIKE_BINDINGS: Record<string, string[]> = { 'decode.qkv': ['U'], 'decode.qkv.lora': ['U'], 'cross-entropy': ['GRAD'] };

function stripComments(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, ' ').replace(/\/\/[^\n]*/g, '');
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Names every registered spec gives to a binding or a uniform block. */
function interfaceNames(specs: readonly KernelSpec[]): Set<string> {
  const names = new Set<string>();
  for (const s of specs) {
    for (const b of Object.values(s.bindings)) names.add(b.var);
    if (s.uniforms) names.add(s.uniforms.var);
  }
  return names;
}

/** Disagreements between one spec and each of its shader variants (empty: they agree). */
function disagreements(spec: KernelSpec, others: Set<string>): string[] {
  const out: string[] = [];
  const own = new Set(Object.values(spec.bindings).map((b) => b.var));
  const u = spec.uniforms;
  if (u) own.add(u.var);
  for (const [variant, parts] of Object.entries(spec.shaders)) {
    const where = `${spec.name} (${variant})`;
    const body = stripComments(parts.join('\n'));
    if (/@binding\s*\(|@group\s*\(/.test(body)) out.push(`${where}: the WGSL declares a binding by hand`);
    const structs = [
      ...(u ? [u.struct, ...Object.values(u.fields).flatMap((f) => (typeof f === 'string' ? [] : [f.array.name]))] : []),
      ...storageStructs(spec).map((s) => s.name),
    ];
    for (const s of structs) if (new RegExp(`\\bstruct\\s+${s}\\b`).test(body)) out.push(`${where}: the WGSL declares struct ${s} by hand`);
    for (const b of Object.values(spec.bindings)) {
      // A packed binding is read through its generated accessors (shader.ts packedAccessors).
      const use = b.packed ? `${escape(b.var)}_load(1|8)\\b` : `${escape(b.var)}\\b`;
      if (!new RegExp(`(?<![.\\w])${use}`).test(body)) out.push(`${where}: the spec binds ${b.var}, the shader never uses it`);
    }
    if (u && !new RegExp(`(?<![.\\w])${escape(u.var)}\\.`).test(body))
      out.push(`${where}: the shader never reads its uniform block ${u.var}`);
    if (u) {
      for (const m of body.matchAll(new RegExp(`(?<![.\\w])${escape(u.var)}\\.(\\w+)`, 'g'))) {
        if (!(m[1] in u.fields) || m[1].startsWith('_'))
          out.push(`${where}: the shader reads ${u.var}.${m[1]}, the spec has no such field`);
      }
    }
    for (const v of others) {
      if (own.has(v) || CONSTS_NAMED_LIKE_BINDINGS[spec.name]?.includes(v)) continue;
      const used = new RegExp(`(?<![.\\w])${escape(v)}\\b(?!\\s*:)`).test(body);
      const local = new RegExp(`\\b(let|var|const|override|fn)\\b(\\s*<[^>]*>)?\\s+${escape(v)}\\b|\\b${escape(v)}\\s*:`).test(body);
      if (used && !local) out.push(`${where}: the shader uses ${v}, which the spec does not declare`);
    }
  }
  return out;
}

describe('kernel specs agree with their WGSL', () => {
  const others = interfaceNames(KERNEL_SPECS);

  it('registers each family once, under its own name', () => {
    const names = KERNEL_SPECS.map((s) => s.name);
    expect(new Set(names).size).toBe(names.length);
    expect(names.length).toBeGreaterThan(20);
  });

  for (const spec of KERNEL_SPECS) {
    it(`${spec.name}: shader text and spec agree`, () => {
      expect(disagreements(spec, others)).toEqual([]);
    });

    it(`${spec.name}: every entry point fits the default storage-binding limit (or the one it declares), numbers are unique`, () => {
      // A spec may need more (a fused decode kernel's LoRA variant), up to what Chrome offers.
      expect(spec.minStorageLimit ?? DEFAULT_STORAGE_LIMIT).toBeLessThanOrEqual(CHROME_STORAGE_LIMIT);
      for (const entry of spec.entryPoints ? Object.keys(spec.entryPoints) : [undefined]) {
        expect(entryBindings(spec, entry).length).toBeLessThanOrEqual(spec.minStorageLimit ?? DEFAULT_STORAGE_LIMIT);
      }
      const { storage, uniform } = bindingNumbers(spec);
      const numbers = [...Object.values(storage), ...(uniform === null ? [] : [uniform])];
      expect(new Set(numbers).size).toBe(numbers.length);
      expect(wgslDeclarations(spec).match(/@binding\(/g)?.length).toBe(numbers.length);
    });
  }

  it('finds a spec field the shader reads under another name, an unused binding, and a hand-written declaration', () => {
    const renamed: KernelSpec = {
      ...RMSNORM_SPEC,
      uniforms: { ...RMSNORM_SPEC.uniforms!, fields: { ...RMSNORM_SPEC.uniforms!.fields, eps: undefined!, epsilon: 'f32' } },
    };
    delete (renamed.uniforms!.fields as Record<string, unknown>).eps;
    expect(disagreements(renamed, others)).toContain('rmsnorm (main): the shader reads P.eps, the spec has no such field');

    const extra: KernelSpec = {
      ...RMSNORM_SPEC,
      bindings: { ...RMSNORM_SPEC.bindings, bias: { var: 'BIAS', type: 'f32', access: 'read', doc: '' } },
    };
    expect(disagreements(extra, others)).toContain('rmsnorm (main): the spec binds BIAS, the shader never uses it');

    const handWritten: KernelSpec = {
      ...RMSNORM_SPEC,
      shaders: { main: ['@group(0) @binding(0) var<storage, read> IN: array<f32>;', ...RMSNORM_SPEC.shaders.main] },
    };
    expect(disagreements(handWritten, others)).toContain('rmsnorm (main): the WGSL declares a binding by hand');

    const { VEC: _, ...rest } = Object.fromEntries(Object.entries(RMSNORM_SPEC.bindings).map(([k, b]) => [b.var, [k, b]]));
    const missing: KernelSpec = { ...RMSNORM_SPEC, bindings: Object.fromEntries(Object.values(rest)) };
    expect(disagreements(missing, others)).toContain('rmsnorm (main): the shader uses VEC, which the spec does not declare');
  });
});

describe('uniforms are packed by name', () => {
  const gemm = {
    M: 2,
    N: 3,
    K: 4,
    a_off: 0,
    a_sm: 4,
    a_sk: 1,
    b_off: 0,
    b_sn: 4,
    b_sk: 1,
    c_off: 5,
    c_sm: 3,
    bias_off: 7,
    alpha: 0.5,
  };

  it('writes each field at its declaration index with its type', () => {
    const buf = packUniformValues(GEMM_SPEC, gemm);
    expect(buf.byteLength).toBe(64);
    expect([...new Uint32Array(buf, 0, 12)]).toEqual([2, 3, 4, 0, 4, 1, 0, 4, 1, 5, 3, 7]);
    expect(new Float32Array(buf)[12]).toBe(0.5);
  });

  it('reads a field list in memory order, u32 unless typed, and refuses a repeated name or an unknown type', () => {
    const block = params(' n scale:f32  shift:i32 m ');
    expect(block).toEqual({ var: 'P', struct: 'Params', fields: { n: 'u32', scale: 'f32', shift: 'i32', m: 'u32' } });
    expect(params('V k', { var: 'pdims', struct: 'PromptDims', first: true })).toMatchObject({
      var: 'pdims',
      struct: 'PromptDims',
      first: true,
    });
    expect(() => params('n m n')).toThrow('uniform field n is listed twice');
    expect(() => params('n eps:f64')).toThrow('uniform field eps:f64: the type is not u32, f32 or i32');
  });

  it('refuses a missing field, an unknown field and an out-of-range value, naming the kernel and the field', () => {
    const { alpha: _, ...noAlpha } = gemm;
    expect(() => packUniformValues(GEMM_SPEC, noAlpha)).toThrow('gemm: uniform alpha is missing');
    expect(() => packUniformValues(GEMM_SPEC, { ...gemm, beta: 1 })).toThrow('gemm: unknown uniform beta');
    expect(() => packUniformValues(GEMM_SPEC, { ...gemm, M: -1 })).toThrow('gemm: uniform M = -1 is not a u32');
    expect(() => packUniformValues(GEMM_SPEC, { ...gemm, K: 2.5 })).toThrow('gemm: uniform K = 2.5 is not a u32');
    expect(() => packUniformValues(GEMM_SPEC, { ...gemm, alpha: Number.NaN })).toThrow('gemm: uniform alpha = NaN is not an f32');
    expect(() => packUniformValues(SAMPLER_DRAW_SPEC, { V: 10, B: 1, num_chunks: 1, W: 1, _pad: 0 })).toThrow('unknown uniform _pad');
  });

  it('lays out a problem table at 16-byte strides after the header, padding zeroed', () => {
    const problem = {
      M: 1,
      N: 2,
      K: 3,
      x_off: 4,
      ldx: 5,
      y_off: 6,
      ldy: 7,
      out_off: 8,
      ldo: 9,
      transposed: 1,
      kps: 11,
      splits: 12,
      part_off: 13,
      first: 14,
      alpha: 1.5,
    };
    const buf = packUniformValues(LORA_GRAD_SPEC, { count: 2, total: 9, problems: [problem, { ...problem, M: 21 }] });
    const u = new Uint32Array(buf);
    expect(buf.byteLength).toBe(16 + 8 * 64);
    expect(Array.from(u.slice(0, 5))).toEqual([2, 9, 0, 0, 1]);
    expect(new Float32Array(buf)[4 + 14]).toBe(1.5);
    expect(u[4 + 16]).toBe(21);
    expect(() => packUniformValues(LORA_GRAD_SPEC, { count: 1, total: 1, problems: [{ ...problem, alpha: undefined! }] })).toThrow(
      'lora-grad: uniform problems[0].alpha is missing',
    );
    expect(() => packUniformValues(LORA_GRAD_SPEC, { count: 9, total: 1, problems: new Array(9).fill(problem) })).toThrow('holds 8');
  });
});

describe('storage structs are declared once, in the spec', () => {
  it('generates struct BatchRow once for the kernels whose bindings are arrays of it', () => {
    for (const spec of [DECODE_ATTENTION_SPEC, QKV_PREP_SPEC, DECODE_QKV_SPEC]) {
      const text = wgslDeclarations(spec);
      expect(text.match(/struct BatchRow \{/g)).toHaveLength(1);
      expect(text).toContain('struct BatchRow {\n  seq: u32,\n  pos: u32,\n  adapter: u32,\n  count: u32,\n}');
      expect(text).toMatch(/var<storage, read> \w+: array<BatchRow>;/);
    }
  });

  it('packs rows in field order, 16 bytes each, at least one row, refusing a bad field', () => {
    const rows = packBatchRows([
      { seq: 3, pos: 17, adapter: NO_ADAPTER, count: 1 },
      { seq: 0, pos: 0, adapter: 2, count: 9 },
    ]);
    expect([...rows]).toEqual([3, 17, 0xffffffff, 1, 0, 0, 2, 9]);
    expect(packBatchRows([])).toHaveLength(4);
    expect(() => packBatchRows([{ seq: -1, pos: 0, adapter: 0, count: 1 }])).toThrow('BatchRow: row 0 field seq = -1 is not a u32');
    expect(() => packStructs(BATCH_ROW, [{ seq: 0, pos: 0, adapter: 0 }])).toThrow('BatchRow: row 0 field count is missing');
    expect(() => packStructs(BATCH_ROW, [{ seq: 0, pos: 0, adapter: 0, count: 1, slot: 2 }])).toThrow('unknown field of row 0: slot');
  });
});
