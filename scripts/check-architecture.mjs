#!/usr/bin/env node
/**
 * The architecture check `npm run lint` runs: the house rules docs/engine.md "Floors" and docs/design.md's
 * arrows state, which no linter rule covers whole.
 *
 * 1. Floors: an import may go to its own folder or to a lower floor, never up (FLOORS below).
 * 2. No import cycle, type-only imports and `export ... from` included (oxlint's import/no-cycle
 *    skips a circle that is type-only on one side).
 * 3. No source file over MAX_LINES lines (tests are exempt: a test file reads as a list of cases).
 *
 * It reads import lines as text (static, type-only, re-exports, `import()`), so it needs no build
 * and runs in a second. Exits 1 and lists every violation.
 */
import { readdirSync, readFileSync, existsSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository (`--root DIR` checks another tree: the check's own test builds small ones). */
const rootFlag = process.argv.indexOf('--root');
const ROOT = rootFlag > 0 ? resolve(process.argv[rootFlag + 1]) : resolve(dirname(fileURLToPath(import.meta.url)), '..');
const MAX_LINES = 400;
/** Where the size cap applies (`test/` is not here on purpose). */
const SIZED = ['src', 'workers', 'bridge/src', 'scripts'];
/** Where imports are read. */
const SCANNED = ['src', 'workers', 'bridge/src'];

/**
 * Floors, lowest first. A folder's files may import files of their own folder and of any folder on a
 * lower floor. `typesOnlyFrom` lists lower folders a floor may take types from and nothing else: the
 * UI reads the shapes of what /v1 answers, never runs the service's code (it reaches it by fetch).
 * The longest matching prefix names a file's folder.
 */
const FLOORS = [
  { floor: 0, folders: ['src/engine/tensor', 'src/engine/sampling'] },
  { floor: 1, folders: ['src/engine/gpu'] },
  { floor: 2, folders: ['src/engine/kernels'] },
  { floor: 3, folders: ['src/engine/model'] },
  { floor: 4, folders: ['src/engine/generate', 'src/engine/train'] },
  { floor: 5, folders: ['src/engine/cpu'] },
  { floor: 6, folders: ['src/store'] },
  { floor: 7, folders: ['src/service', 'src/demo'] },
  { floor: 8, folders: ['src/api'] },
  // The loopback bridge takes the API's body limits; its wire protocol is one the UI's relay speaks.
  { floor: 9, folders: ['bridge/src'] },
  { floor: 10, folders: ['src/ui'], typesOnlyFrom: ['src/service', 'src/api'] },
  // The page's entry mounts the UI; the worker entries start the host.
  { floor: 11, folders: ['src/host'] },
  { floor: 12, folders: ['workers'] },
];
/** Folders beside the floors with their own rule. */
const RULES = {
  // The test oracle: it may read the facts of the floors it checks (dtypes, sampling rows, the kernels'
  // KV layout and activation kinds, what a model is), never the GPU plumbing or the engines above,
  // and nothing in production imports it.
  'src/engine/reference': {
    mayImport: ['src/engine/tensor', 'src/engine/sampling', 'src/engine/kernels', 'src/engine/model'],
    production: false,
  },
};
/** Folders the store, and the engine, must never reach whatever their floor says. */
const NEVER = [
  { from: 'src/store', to: ['src/engine'] },
  { from: 'src/engine', to: ['src/store', 'src/service', 'src/api', 'src/host', 'src/ui', 'src/demo'] },
  { from: 'src/ui', to: ['src/engine', 'src/store'] },
];

function walk(dir, out = []) {
  if (!existsSync(dir)) return out;
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) walk(path, out);
    else if (/\.(ts|mjs|js|wgsl)$/.test(name) && !name.endsWith('.d.ts')) out.push(path);
  }
  return out;
}

const rel = (p) => relative(ROOT, p).split('\\').join('/');

/** Block comments and whole-line comments out, so a path in a doc comment is not an import. */
function stripComments(text) {
  return text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
}

const IMPORT_PATTERNS = [
  /\b(import|export)\s+(type\s+)?[^'";]*?\bfrom\s*['"]([^'"]+)['"]/g,
  /\b(import)()\s*['"]([^'"]+)['"]/g,
  /\b(import)()\s*\(\s*['"]([^'"]+)['"]\s*\)/g,
];

/** The file's relative imports: { target (repo path), typeOnly }. */
function importsOf(file) {
  const text = stripComments(readFileSync(file, 'utf8'));
  const found = [];
  for (const pattern of IMPORT_PATTERNS) {
    for (const m of text.matchAll(pattern)) {
      const spec = m[3].replace(/\?.*$/, '');
      if (!spec.startsWith('.')) continue;
      const target = resolveModule(join(dirname(file), spec));
      if (target) found.push({ target, typeOnly: Boolean(m[2]) || /^import\s+type\b|^export\s+type\b/.test(m[0]) });
    }
  }
  return found;
}

function resolveModule(base) {
  for (const candidate of [base, `${base}.ts`, `${base}.mjs`, `${base}.js`, join(base, 'index.ts')]) {
    if (existsSync(candidate) && statSync(candidate).isFile()) return candidate;
  }
  return null;
}

function folderOf(path, folders) {
  let best = null;
  for (const f of folders) if ((path === f || path.startsWith(`${f}/`)) && (!best || f.length > best.length)) best = f;
  return best;
}

const allFolders = [...FLOORS.flatMap((f) => f.folders), ...Object.keys(RULES)];
const floorOf = new Map(FLOORS.flatMap((f) => f.folders.map((folder) => [folder, f])));
const under = (path, folder) => path === folder || path.startsWith(`${folder}/`);

function floorViolation(from, to, typeOnly) {
  for (const rule of NEVER) {
    if (under(from, rule.from) && rule.to.some((t) => under(to, t))) return `${rule.from} never imports ${to}`;
  }
  const a = folderOf(from, allFolders);
  const b = folderOf(to, allFolders);
  if (!a || !b || a === b) return null;
  if (RULES[b] && RULES[b].production === false && !RULES[a]) return `production code imports the test oracle ${b}`;
  if (RULES[a]) return RULES[a].mayImport.includes(b) ? null : `${a} may import only ${RULES[a].mayImport.join(', ')}`;
  if (RULES[b]) return null;
  const fa = floorOf.get(a);
  const fb = floorOf.get(b);
  if (fa.typesOnlyFrom?.includes(b)) return typeOnly ? null : `${a} takes only types from ${b}`;
  if (fb.floor < fa.floor) return null;
  return `${a} (floor ${fa.floor}) imports ${b} (floor ${fb.floor}), not below it`;
}

/** Tarjan's strongly connected components: each component of more than one file is a cycle. */
function cycles(graph) {
  let index = 0;
  const stack = [];
  const info = new Map();
  const found = [];
  const visit = (v) => {
    info.set(v, { index, low: index, onStack: true });
    index++;
    stack.push(v);
    for (const w of graph.get(v) ?? []) {
      if (!info.has(w)) {
        visit(w);
        info.get(v).low = Math.min(info.get(v).low, info.get(w).low);
      } else if (info.get(w).onStack) info.get(v).low = Math.min(info.get(v).low, info.get(w).index);
    }
    if (info.get(v).low === info.get(v).index) {
      const component = [];
      let w;
      do {
        w = stack.pop();
        info.get(w).onStack = false;
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || (graph.get(v) ?? []).includes(v)) found.push(component.sort((x, y) => x.localeCompare(y)));
    }
  };
  for (const v of graph.keys()) if (!info.has(v)) visit(v);
  return found;
}

const problems = [];
const graph = new Map();
for (const dir of SCANNED) {
  for (const file of walk(join(ROOT, dir))) {
    if (file.endsWith('.wgsl')) continue;
    const from = rel(file);
    if (!folderOf(from, allFolders)) problems.push(`no floor: ${from} is in no folder of the floors table (add its folder)`);
    const edges = new Set();
    for (const { target, typeOnly } of importsOf(file)) {
      const to = rel(target);
      edges.add(to);
      const why = floorViolation(from, to, typeOnly);
      if (why) problems.push(`upward import: ${from} -> ${to} (${why})`);
    }
    graph.set(from, [...edges]);
  }
}
for (const component of cycles(graph)) problems.push(`import cycle: ${component.join(' <-> ')}`);
for (const dir of SIZED) {
  for (const file of walk(join(ROOT, dir))) {
    const lines = readFileSync(file, 'utf8').split('\n').length - 1;
    if (lines > MAX_LINES) problems.push(`too long: ${rel(file)} has ${lines} lines (at most ${MAX_LINES}; split it by job)`);
  }
}

if (problems.length > 0) {
  console.error(`check-architecture: ${problems.length} problem(s)\n${problems.map((p) => `  ${p}`).join('\n')}`);
  process.exit(1);
}
console.log(`check-architecture: ${graph.size} files, floors kept, no import cycle, none over ${MAX_LINES} lines`);
