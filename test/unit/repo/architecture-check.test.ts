/**
 * scripts/check-architecture.mjs, which `npm run lint` runs, on small trees built here: it must
 * refuse an import up a floor, a circle (type-only ones too), production code reaching the test
 * oracle and an overlong source file, and let through what the floors allow.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';

const SCRIPT = join(process.cwd(), 'scripts/check-architecture.mjs');
const roots: string[] = [];

/** Writes `files` (path -> text) into a fresh tree and runs the check on it. */
function check(files: Record<string, string>): { ok: boolean; output: string } {
  const root = mkdtempSync(join(tmpdir(), 'hearth-arch-'));
  roots.push(root);
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  try {
    return { ok: true, output: execFileSync('node', [SCRIPT, '--root', root], { encoding: 'utf8', stdio: 'pipe' }) };
  } catch (e) {
    const err = e as { stderr: string; stdout: string };
    return { ok: false, output: `${err.stdout}${err.stderr}` };
  }
}

afterEach(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
});

const lines = (n: number) => Array.from({ length: n }, (_, i) => `export const x${i} = ${i};`).join('\n') + '\n';

describe('the architecture check', () => {
  it('passes imports that go down a floor or stay in their folder', () => {
    const r = check({
      'src/engine/tensor/dtype.ts': 'export type DType = "f32";\n',
      'src/engine/gpu/packed.ts': "import type { DType } from '../tensor/dtype';\nexport const d: DType = 'f32';\n",
      'src/engine/kernels/gemv.ts': "import { d } from '../gpu/packed';\nimport { y } from './shared';\nexport const g = d + y;\n",
      'src/engine/kernels/shared.ts': 'export const y = 1;\n',
      'src/engine/model/weights.ts': "import { g } from '../kernels/gemv';\nexport const w = g;\n",
      'src/engine/reference/gemv.ts': "import type { DType } from '../tensor/dtype';\nexport const r: DType = 'f32';\n",
      'src/ui/view.ts': "import type { Status } from '../service/status';\nexport const s: Status | null = null;\n",
      'src/service/status.ts': "import { w } from '../engine/model/weights';\nexport interface Status { w: typeof w }\n",
      'test/unit/long.test.ts': lines(500),
    });
    expect(r.output).toContain('floors kept');
    expect(r.ok).toBe(true);
  });

  it('refuses an import up a floor, naming both files', () => {
    const r = check({
      'src/engine/model/config.ts': 'export type Activation = "silu";\n',
      'src/engine/kernels/swiglu.ts': "import type { Activation } from '../model/config';\nexport const a: Activation = 'silu';\n",
    });
    expect(r.ok).toBe(false);
    expect(r.output).toMatch(/upward import: src\/engine\/kernels\/swiglu\.ts -> src\/engine\/model\/config\.ts/);
  });

  it('refuses a circle that is type-only on one side', () => {
    const r = check({
      'src/engine/model/tokenizer.ts': "import { Detokenizer } from './detokenizer';\nexport class Tokenizer { d = new Detokenizer(); }\n",
      'src/engine/model/detokenizer.ts':
        "import type { Tokenizer } from './tokenizer';\nexport class Detokenizer { t: Tokenizer | null = null; }\n",
    });
    expect(r.ok).toBe(false);
    expect(r.output).toContain('import cycle: src/engine/model/detokenizer.ts <-> src/engine/model/tokenizer.ts');
  });

  it('refuses production code that imports the test oracle, and the oracle importing GPU code', () => {
    const r = check({
      'src/engine/reference/random.ts': 'export const seed = 1;\n',
      'src/engine/gpu/device.ts': 'export const device = 1;\n',
      'src/engine/train/plan.ts': "import { seed } from '../reference/random';\nexport const p = seed;\n",
      'src/engine/reference/gemv.ts': "import { device } from '../gpu/device';\nexport const r = device;\n",
    });
    expect(r.ok).toBe(false);
    expect(r.output).toContain('production code imports the test oracle');
    expect(r.output).toMatch(/src\/engine\/reference\/gemv\.ts -> src\/engine\/gpu\/device\.ts/);
  });

  it('refuses the UI importing service code (types only), and the store reaching the engine', () => {
    const r = check({
      'src/service/status.ts': 'export function status() { return 1; }\n',
      'src/ui/view.ts': "import { status } from '../service/status';\nexport const s = status();\n",
      'src/engine/gpu/device.ts': 'export const device = 1;\n',
      'src/store/db.ts': "import { device } from '../engine/gpu/device';\nexport const d = device;\n",
    });
    expect(r.ok).toBe(false);
    expect(r.output).toMatch(/src\/ui\/view\.ts -> src\/service\/status\.ts/);
    expect(r.output).toMatch(/src\/store\/db\.ts -> src\/engine\/gpu\/device\.ts \(src\/store never imports/);
  });

  it('refuses a source folder the floors table does not place', () => {
    const r = check({ 'src/engine/gpu/device.ts': 'export const device = 1;\n', 'src/engine/extras/tool.ts': 'export const t = 1;\n' });
    expect(r.ok).toBe(false);
    expect(r.output).toContain('no floor: src/engine/extras/tool.ts');
  });

  it('refuses a source file over 400 lines, not one of 400', () => {
    const r = check({ 'src/service/ok.ts': lines(400), 'scripts/long.ts': lines(401) });
    expect(r.ok).toBe(false);
    expect(r.output).toContain('too long: scripts/long.ts has 401 lines');
    expect(r.output).not.toContain('src/service/ok.ts');
  });
});
