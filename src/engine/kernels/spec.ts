/**
 * Kernel specs: the one place a kernel family's interface is written (docs/style.md "For Hearth" 4,
 * issue 15 item 1). A spec names each binding (WGSL variable, element type, access, what it holds)
 * and each uniform field (name, scalar type); from it come the WGSL `struct` and `@binding`
 * declarations prepended to the family's shader text, the bind-group layout, the bind group built
 * from a named object of buffers, and the uniform block packed from a named object of values.
 * Bindings are numbered in the spec's order; the uniform block goes after them unless the spec
 * says `first`. The generated text is a pure function of the spec, so pipeline cache keys are stable.
 *
 * Not here: GPU objects (layouts and calls are made in spec-kernel.ts), any kernel's math.
 * Reference: WGSL §"Resource interface" https://www.w3.org/TR/WGSL/#resource-interface.
 */

export type ScalarType = 'u32' | 'f32' | 'i32';

export interface BindingSpec {
  /** The WGSL variable name the shader body uses. */
  var: string;
  /**
   * Element type of the runtime-sized array: `f32`, `u32`, `vec4<u32>`, or a storage struct
   * (StructSpec), whose WGSL declaration is generated with the bindings and whose rows TS packs with
   * `packStructs`.
   */
  type: string | StructSpec;
  access: 'read' | 'read_write';
  /** What the buffer holds (shape, layout); emitted as a comment beside the declaration. */
  doc: string;
  /**
   * Weights packed in u32 words (`type` vec4<u32>), read through the `VAR_load1` / `VAR_load8`
   * accessors composeShader generates for the dtype the wrapper gives it.
   */
  packed?: true;
}

/** A uniform field: a scalar, or a fixed-length array of a struct of scalars (a problem table). */
export type FieldSpec = ScalarType | { array: StructSpec; length: number; lengthConst: string };

export interface StructSpec {
  name: string;
  /** Field order is the memory order; names starting with `_` are padding, packed as zero. */
  fields: Record<string, ScalarType>;
}

export interface UniformSpec {
  /** WGSL variable name (`P`, `params`, `dims`). */
  var: string;
  /** WGSL struct name (`Params`). */
  struct: string;
  /** Field order is the memory order; names starting with `_` are padding, packed as zero. */
  fields: Record<string, FieldSpec>;
  /** Binding 0 instead of after the storage bindings. */
  first?: boolean;
}

export interface KernelSpec<B extends string = string> {
  /** Family name: labels, and the name errors carry. */
  name: string;
  bindings: Record<B, BindingSpec>;
  uniforms?: UniformSpec;
  /** Entry points that use only some bindings (their layout lists only those); absent: all. */
  entryPoints?: Record<string, readonly B[]>;
  /**
   * Storage bindings per stage the spec needs when that is more than WebGPU's default 8; its wrapper
   * uses it only on a device that offers them (a fused decode kernel's LoRA variant, decode-lora.ts).
   */
  minStorageLimit?: number;
  /**
   * The WGSL the family compiles after the declarations, per shader variant (snippets first, then
   * the entry file). Wrappers compose from these; the agreement test checks each against the spec.
   */
  shaders: Record<string, readonly string[]>;
}

/** A read-only storage binding. */
export const ro = (v: string, type: string | StructSpec, doc: string): BindingSpec => ({ var: v, type, access: 'read', doc });

/** A read-write storage binding. */
export const rw = (v: string, type: string | StructSpec, doc: string): BindingSpec => ({ var: v, type, access: 'read_write', doc });

/** A read-only binding of weights packed in u32 words (`vec4<u32>`), read through `VAR_load1` / `VAR_load8`. */
export const packed = (v: string, doc: string): BindingSpec => ({ var: v, type: 'vec4<u32>', access: 'read', doc, packed: true });

/**
 * A uniform block of scalar fields written as one list of names in memory order, each u32 unless
 * it says `:f32` or `:i32` (`'N C in_off eps:f32'`); most families use `P: Params`.
 */
export function params(fields: string, block: { var?: string; struct?: string; first?: true } = {}): UniformSpec {
  const out: Record<string, ScalarType> = {};
  for (const item of fields.trim().split(/\s+/)) {
    const [name, type = 'u32'] = item.split(':');
    if (type !== 'u32' && type !== 'f32' && type !== 'i32') throw new Error(`uniform field ${item}: the type is not u32, f32 or i32`);
    if (name in out) throw new Error(`uniform field ${name} is listed twice`);
    out[name] = type;
  }
  return { var: block.var ?? 'P', struct: block.struct ?? 'Params', fields: out, ...(block.first ? { first: true } : {}) };
}

/** A value per field of a spec's uniform block (padding omitted); arrays as lists of such objects. */
export type UniformValues = Record<string, number | ReadonlyArray<Record<string, number>>>;

/** Binding number of each storage binding and of the uniform block. */
export function bindingNumbers(spec: KernelSpec): { storage: Record<string, number>; uniform: number | null } {
  const names = Object.keys(spec.bindings);
  const shift = spec.uniforms?.first ? 1 : 0;
  const storage: Record<string, number> = {};
  names.forEach((n, i) => (storage[n] = i + shift));
  const uniform = spec.uniforms ? (spec.uniforms.first ? 0 : names.length) : null;
  return { storage, uniform };
}

/** Storage bindings an entry point uses, in binding order. */
export function entryBindings(spec: KernelSpec, entry?: string): string[] {
  const all = Object.keys(spec.bindings);
  if (entry === undefined || !spec.entryPoints) return all;
  const used = spec.entryPoints[entry];
  if (!used) throw new Error(`${spec.name}: no entry point ${entry} in the spec`);
  return all.filter((n) => used.includes(n));
}

function structText(s: StructSpec | { name: string; fields: Record<string, FieldSpec> }): string {
  const lines = Object.entries(s.fields).map(
    ([k, t]) => `  ${k}: ${typeof t === 'string' ? t : `array<${t.array.name}, ${t.lengthConst}>`},`,
  );
  return `struct ${s.name} {\n${lines.join('\n')}\n}`;
}

/** The WGSL name of a binding's element type. */
export function elementTypeName(b: BindingSpec): string {
  return typeof b.type === 'string' ? b.type : b.type.name;
}

/** The storage structs a spec's bindings are arrays of, each once (one name, one declaration). */
export function storageStructs(spec: KernelSpec): StructSpec[] {
  const seen = new Map<string, StructSpec>();
  for (const b of Object.values<BindingSpec>(spec.bindings)) {
    if (typeof b.type === 'string') continue;
    const had = seen.get(b.type.name);
    if (had && had !== b.type) throw new Error(`${spec.name}: two different structs are named ${b.type.name}`);
    seen.set(b.type.name, b.type);
  }
  return [...seen.values()];
}

/**
 * The WGSL declarations of a spec: storage structs, uniform structs, then one `@group(0)
 * @binding(i)` line per binding.
 */
export function wgslDeclarations(spec: KernelSpec): string {
  const out: string[] = storageStructs(spec).map(structText);
  const { storage, uniform } = bindingNumbers(spec);
  const u = spec.uniforms;
  if (u) {
    for (const f of Object.values(u.fields)) if (typeof f !== 'string') out.push(structText(f.array));
    out.push(structText({ name: u.struct, fields: u.fields }));
  }
  const lines: Array<[number, string]> = Object.entries(spec.bindings).map(([name, b]) => {
    // The doc becomes a line comment: a line break would end it and put the rest in the WGSL.
    if (/[\r\n]/.test(b.doc)) throw new Error(`${spec.name}: the doc of binding ${name} spans lines`);
    return [
      storage[name],
      `@group(0) @binding(${storage[name]}) var<storage, ${b.access}> ${b.var}: array<${elementTypeName(b)}>; // ${name}: ${b.doc}`,
    ];
  });
  if (u && uniform !== null) lines.push([uniform, `@group(0) @binding(${uniform}) var<uniform> ${u.var}: ${u.struct};`]);
  lines.sort((a, b) => a[0] - b[0]);
  out.push(lines.map((l) => l[1]).join('\n'));
  return out.join('\n\n');
}

function packScalar(
  kernel: string,
  field: string,
  type: ScalarType,
  v: unknown,
  u: Uint32Array,
  f: Float32Array,
  i: Int32Array,
  at: number,
): void {
  if (typeof v !== 'number') throw new Error(`${kernel}: ${field} is ${v === undefined ? 'missing' : `not a number (${String(v)})`}`);
  if (type === 'u32') {
    if (!Number.isInteger(v) || v < 0 || v > 0xffffffff) throw new Error(`${kernel}: ${field} = ${v} is not a u32`);
    u[at] = v;
  } else if (type === 'i32') {
    if (!Number.isInteger(v) || v < -0x80000000 || v > 0x7fffffff) throw new Error(`${kernel}: ${field} = ${v} is not an i32`);
    i[at] = v;
  } else {
    if (Number.isNaN(v) || (Number.isFinite(v) && Math.abs(v) > 3.4028234663852886e38))
      throw new Error(`${kernel}: ${field} = ${v} is not an f32`);
    f[at] = v;
  }
}

function checkNames(kernel: string, what: string, given: object, fields: Record<string, unknown>): void {
  for (const k of Object.keys(given)) if (!(k in fields) || k.startsWith('_')) throw new Error(`${kernel}: unknown ${what} ${k}`);
}

/** Words of a uniform block: scalars are 4 bytes; an array of structs starts and strides at 16 bytes. */
function structWords(s: StructSpec): number {
  return Math.ceil(Object.keys(s.fields).length / 4) * 4;
}

/**
 * Packs a spec's uniform block from named values, in the spec's field order. A missing or unknown
 * field, a value out of its type's range, or an array longer than its length throws, naming the
 * kernel and the field.
 */
export function packUniformValues(spec: KernelSpec, values: UniformValues): ArrayBuffer {
  const u = spec.uniforms;
  if (!u) throw new Error(`${spec.name}: the kernel has no uniform block`);
  checkNames(spec.name, 'uniform', values, u.fields);
  let words = 0;
  for (const t of Object.values(u.fields))
    words = typeof t === 'string' ? words + 1 : alignWords(words, 4) + t.length * structWords(t.array);
  const buf = new ArrayBuffer(Math.max(16, alignWords(words, 4) * 4));
  const uv = new Uint32Array(buf);
  const fv = new Float32Array(buf);
  const iv = new Int32Array(buf);
  let at = 0;
  for (const [name, t] of Object.entries(u.fields)) {
    if (typeof t === 'string') {
      if (!name.startsWith('_')) packScalar(spec.name, `uniform ${name}`, t, values[name], uv, fv, iv, at);
      at++;
      continue;
    }
    at = alignWords(at, 4);
    const list = values[name];
    if (!Array.isArray(list)) throw new Error(`${spec.name}: uniform ${name} is missing or not a list`);
    if (list.length > t.length) throw new Error(`${spec.name}: uniform ${name} has ${list.length} entries, the block holds ${t.length}`);
    list.forEach((item: Record<string, number>, j: number) => {
      checkNames(spec.name, `field of ${name}[${j}]:`, item, t.array.fields);
      let k = at + j * structWords(t.array);
      for (const [fname, ft] of Object.entries(t.array.fields)) {
        if (!fname.startsWith('_')) packScalar(spec.name, `uniform ${name}[${j}].${fname}`, ft, item[fname], uv, fv, iv, k);
        k++;
      }
    });
    at += t.length * structWords(t.array);
  }
  return buf;
}

/**
 * Rows of a storage struct (`array<S>` in WGSL) packed from named values, in the struct's field
 * order: every field is a 4-byte scalar, so a row is 4 bytes per field (WGSL's stride for such a
 * struct). At least `minRows` rows are allocated (a binding is never empty). A missing or unknown
 * field, or a value out of its type's range, throws naming the struct and the field.
 */
export function packStructs(s: StructSpec, rows: ReadonlyArray<Record<string, number>>, minRows = 1): ArrayBuffer {
  const words = Object.keys(s.fields).length;
  const buf = new ArrayBuffer(Math.max(minRows, rows.length) * words * 4);
  const uv = new Uint32Array(buf);
  const fv = new Float32Array(buf);
  const iv = new Int32Array(buf);
  rows.forEach((row, j) => {
    checkNames(s.name, `field of row ${j}:`, row, s.fields);
    let k = j * words;
    for (const [name, t] of Object.entries(s.fields)) {
      if (!name.startsWith('_')) packScalar(s.name, `row ${j} field ${name}`, t, row[name], uv, fv, iv, k);
      k++;
    }
  });
  return buf;
}

function alignWords(n: number, a: number): number {
  return Math.ceil(n / a) * a;
}
