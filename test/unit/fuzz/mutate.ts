// Seeded, deterministic mutations of untrusted files for the fuzz tests in this folder: byte flips,
// truncation at structural boundaries, length/count/offset fields overwritten with hostile values,
// and JSON documents with one node replaced by a hostile value (huge numbers, huge strings, deep
// nesting, wrong types) or a duplicated key. Each mutation carries a description, so a failure
// names the input that caused it and can be replayed from the seed.
// Not here: the properties checked (each *.fuzz.test.ts), the parsers. Reference: the classic
// AFL mutation stages (bit flips, "interesting values", block deletion and duplication).
import { expect } from 'vitest';
import { Rng } from '../../../src/engine/tensor/random';

/**
 * The suite's fixed seed. HEARTH_FUZZ_SEED and HEARTH_FUZZ_SCALE (a multiplier on every mutant
 * count) explore further by hand, e.g.
 * `HEARTH_FUZZ_SEED=7 HEARTH_FUZZ_SCALE=20 npx vitest run --project unit test/unit/fuzz --testTimeout 600000`.
 */
export const SEED = Number(process.env.HEARTH_FUZZ_SEED ?? 0x4ea27);
const SCALE = Number(process.env.HEARTH_FUZZ_SCALE ?? 1);
/** A mutant count scaled by HEARTH_FUZZ_SCALE. */
export const n = (count: number): number => Math.round(count * SCALE);

/** "Interesting" integers for a length, count or offset field (AFL's list, widened to 64 bits). */
export const HOSTILE_INTS: readonly bigint[] = [
  0n,
  1n,
  0x7fn,
  0xffn,
  0x7fffn,
  0xffffn,
  1n << 31n,
  (1n << 32n) - 1n,
  1n << 32n,
  1n << 53n,
  (1n << 63n) - 1n,
  1n << 63n,
  (1n << 64n) - 1n, // -1 as a signed field
];

/** Hostile JSON values: sizes and ids out of every range, wrong types, floats where ints go. */
const HOSTILE_JSON = (): unknown[] => [
  0,
  -1,
  2 ** 31,
  2 ** 32 - 1,
  2 ** 53 + 2,
  2 ** 63,
  1e308,
  -1e308,
  0.5,
  null,
  true,
  '',
  'x'.repeat(1 << 16),
  [],
  {},
  [1, 2, 3],
  { a: 1 },
  nested(2000),
];

function nested(depth: number): unknown {
  let v: unknown = 0;
  for (let i = 0; i < depth; i++) v = i % 2 ? [v] : { a: v };
  return v;
}

export interface Mutant<T> {
  what: string;
  value: T;
}

/**
 * `count` mutants of `bytes`; `fields` are offsets of u32/u64 size/count/offset fields, `bounds`
 * structural boundaries, `span` the prefix random mutations go to (the header of a file whose
 * tensor data is opaque bytes: a flipped weight is not a parsing problem).
 */
export function mutateBytes(
  bytes: Uint8Array,
  count: number,
  seed: number,
  structure: { fields?: ReadonlyArray<{ at: number; width: 4 | 8 }>; bounds?: readonly number[]; span?: number } = {},
): Mutant<Uint8Array>[] {
  const rng = new Rng(seed);
  const fields = structure.fields ?? [];
  const bounds = structure.bounds ?? [];
  const out: Mutant<Uint8Array>[] = [];
  // Every structural boundary, cut exactly there and one byte either side.
  for (const b of bounds) {
    for (const at of [b - 1, b, b + 1])
      if (at >= 0 && at < bytes.length) out.push({ what: `truncated at ${at}`, value: bytes.slice(0, at) });
  }
  // Every field with every hostile value, or (when that would pass half the count) with a seeded few of them.
  const perField = Math.max(2, Math.floor(count / 2 / Math.max(1, fields.length)));
  for (const f of fields) {
    const values = HOSTILE_INTS.filter((v) => f.width === 8 || v <= 0xffffffffn);
    while (values.length > perField) values.splice(rng.int(values.length), 1);
    for (const v of values) {
      const m = bytes.slice();
      const view = new DataView(m.buffer);
      if (f.width === 4) view.setUint32(f.at, Number(v), true);
      else view.setBigUint64(f.at, v, true);
      out.push({ what: `u${f.width * 8} at ${f.at} = ${v}`, value: m });
    }
  }
  while (out.length < count) {
    const m = bytes.slice();
    const kind = rng.int(6);
    const at = rng.int(Math.min(m.length, structure.span ?? m.length));
    if (kind === 0) {
      const bit = rng.int(8);
      m[at] ^= 1 << bit;
      out.push({ what: `bit ${bit} of byte ${at} flipped`, value: m });
    } else if (kind === 1) {
      const n = 1 + rng.int(8);
      for (let i = at; i < Math.min(m.length, at + n); i++) m[i] = rng.int(256);
      out.push({ what: `${n} random bytes at ${at}`, value: m });
    } else if (kind === 2) {
      out.push({ what: `truncated at ${at}`, value: m.slice(0, at) });
    } else if (kind === 3 && fields.length > 0) {
      const f = fields[rng.int(fields.length)];
      const v = HOSTILE_INTS[rng.int(HOSTILE_INTS.length)] + BigInt(rng.int(3)) - 1n;
      const view = new DataView(m.buffer);
      if (f.width === 4) view.setUint32(f.at, Number(BigInt.asUintN(32, v)), true);
      else view.setBigUint64(f.at, BigInt.asUintN(64, v), true);
      out.push({ what: `u${f.width * 8} at ${f.at} = ${BigInt.asUintN(f.width * 8, v)}`, value: m });
    } else if (kind === 4) {
      const n = 1 + rng.int(64);
      const cut = new Uint8Array(m.length - Math.min(n, m.length - at));
      cut.set(m.subarray(0, at));
      cut.set(m.subarray(at + n), at);
      out.push({ what: `${n} bytes deleted at ${at}`, value: cut });
    } else {
      const n = 1 + rng.int(64);
      const dup = new Uint8Array(m.length + Math.min(n, m.length - at));
      dup.set(m.subarray(0, at + n));
      dup.set(m.subarray(at), at + Math.min(n, m.length - at));
      out.push({ what: `${n} bytes duplicated at ${at}`, value: dup });
    }
  }
  return out;
}

type Path = Array<string | number>;

/** Every path to a node of a JSON value, the root included (bounded: the first `max` in walk order). */
function paths(value: unknown, max = 20_000): Path[] {
  const out: Path[] = [];
  const walk = (v: unknown, p: Path) => {
    if (out.length >= max) return;
    out.push(p);
    if (Array.isArray(v)) v.forEach((x, i) => walk(x, [...p, i]));
    else if (v !== null && typeof v === 'object') for (const [k, x] of Object.entries(v)) walk(x, [...p, k]);
  };
  walk(value, []);
  return out;
}

function replaceAt(root: unknown, path: Path, v: unknown): unknown {
  if (path.length === 0) return v;
  const copy = structuredClone(root) as Record<string | number, unknown>;
  let node = copy;
  for (const k of path.slice(0, -1)) node = node[k] as Record<string | number, unknown>;
  node[path[path.length - 1]] = v;
  return copy;
}

/**
 * `count` mutant texts of a JSON document: one node replaced by a hostile value or deleted, a key
 * duplicated with a hostile value (JSON.parse keeps the last), or the text cut or flipped.
 * `focus` (optional) picks the paths to prefer, e.g. those under the keys a parser reads.
 */
export function mutateJson(text: string, count: number, seed: number, focus?: (p: Path) => boolean): Mutant<string>[] {
  const rng = new Rng(seed);
  const doc = JSON.parse(text) as unknown;
  const all = paths(doc);
  const focused = focus ? all.filter(focus) : all;
  const pick = () => {
    const from = focused.length > 0 && rng.int(4) !== 0 ? focused : all;
    return from[rng.int(from.length)];
  };
  const hostile = HOSTILE_JSON();
  const out: Mutant<string>[] = [];
  const where = (p: Path) => p.map(String).join('.') || '(root)';
  while (out.length < count) {
    const kind = rng.int(8);
    const p = pick();
    if (kind <= 3) {
      const i = rng.int(hostile.length);
      const v = hostile[i];
      out.push({ what: `${where(p)} = hostile[${i}]`, value: JSON.stringify(replaceAt(doc, p, v)) });
    } else if (kind === 4 && p.length > 0) {
      const parent = structuredClone(doc);
      let node = parent as Record<string | number, unknown>;
      for (const k of p.slice(0, -1)) node = node[k] as Record<string | number, unknown>;
      const last = p[p.length - 1];
      if (Array.isArray(node)) node.splice(last as number, 1);
      else delete node[last];
      out.push({ what: `${where(p)} deleted`, value: JSON.stringify(parent) });
    } else if (kind === 5 && p.length > 0 && typeof p[p.length - 1] === 'string') {
      // A duplicated key: the text keeps both, JSON.parse keeps the later (hostile) one.
      const key = JSON.stringify(p[p.length - 1]);
      const s = JSON.stringify(doc);
      const at = s.indexOf(`${key}:`);
      const v = hostile[rng.int(hostile.length)];
      out.push({ what: `${where(p)} duplicated`, value: `${s.slice(0, at)}${key}:${JSON.stringify(v)},${s.slice(at)}` });
    } else if (kind === 6) {
      const at = rng.int(text.length);
      out.push({ what: `text truncated at ${at}`, value: text.slice(0, at) });
    } else {
      // A string node's content swapped for another string, or a number nudged off by one or to a float.
      const v = p.reduce<unknown>((n, k) => (n as Record<string | number, unknown>)[k], doc);
      const swapped =
        typeof v === 'number'
          ? [v + 1, v - 1, v * 1e6, v + 0.5][rng.int(4)]
          : typeof v === 'string'
            ? v.slice(0, rng.int(v.length + 1)) + '\u0000{{%'
            : v;
      out.push({
        what: `${where(p)} changed to ${JSON.stringify(swapped)?.slice(0, 40)}`,
        value: JSON.stringify(replaceAt(doc, p, swapped)),
      });
    }
  }
  return out;
}

/** The u64 length prefix and JSON header of a safetensors file, and the data after them. */
export function splitSafetensors(bytes: Uint8Array): { header: string; data: Uint8Array } {
  const length = Number(new DataView(bytes.buffer, bytes.byteOffset).getBigUint64(0, true));
  return { header: new TextDecoder().decode(bytes.subarray(8, 8 + length)), data: bytes.subarray(8 + length) };
}

/** Mutants of a safetensors file's JSON header (dtype, shape, offsets...), the length prefix kept right. */
export function safetensorsHeaderMutants(bytes: Uint8Array, count: number, seed: number): Mutant<Uint8Array>[] {
  const { header, data } = splitSafetensors(bytes);
  return mutateJson(header, count, seed).map((m) => {
    const h = new TextEncoder().encode(m.value);
    const out = new Uint8Array(8 + h.length + data.length);
    new DataView(out.buffer).setBigUint64(0, BigInt(h.length), true);
    out.set(h, 8);
    out.set(data, 8 + h.length);
    return { what: `header: ${m.what}`, value: out };
  });
}

/** An error class a parser documents, which the API maps to a 4xx. */
export type ErrorClass = abstract new (...args: never[]) => Error;

/** A JavaScript engine's TypeError text wrapped into a documented error: it names no field a user could fix. */
const INTERNAL_MESSAGE =
  /\.\w+ is not a function|Cannot read properties of (undefined|null)|is not iterable|Cannot convert undefined or null/;

/**
 * Runs `parse` on every mutant: it must succeed or throw one of `allowed` with a message that is not
 * an engine's TypeError text; any other error (a TypeError or RangeError from deep inside) fails the
 * test, naming every mutant that caused one.
 * `Error` in `allowed` means a plain Error thrown with a message on purpose, not its subclasses.
 */
export async function expectParsesOrRefuses<T>(
  mutants: readonly Mutant<T>[],
  parse: (value: T) => unknown,
  allowed: readonly ErrorClass[],
): Promise<{ parsed: number; refused: number }> {
  const bad: string[] = [];
  let parsed = 0;
  let refused = 0;
  for (const m of mutants) {
    try {
      await parse(m.value);
      parsed++;
    } catch (e) {
      if (
        allowed.some((cls) => (cls === Error ? (e as Error)?.constructor === Error : e instanceof cls)) &&
        (e as Error).message.length > 0 &&
        !INTERNAL_MESSAGE.test((e as Error).message)
      )
        refused++;
      else bad.push(`${m.what}: ${(e as Error)?.name}: ${String((e as Error)?.message).slice(0, 200)}`);
    }
  }
  expect(bad, `mutants that escaped with an undocumented error`).toEqual([]);
  return { parsed, refused };
}
