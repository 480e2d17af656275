/**
 * `npm run make-models`: writes Hearth's bundled models under public/models/ (see
 * scripts/model-making/build.ts). Deterministic: running it twice gives byte-identical files.
 * With --check it writes nothing and exits 1 if a file differs from what is committed (except
 * tiny-chat's and tiny-json's weights when --allow-trained-weights is passed, for after the
 * demo training replaced them).
 */
import { mkdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { makeModels } from './model-making/build';
import { TRAINED_WEIGHT_FILES } from './model-making/models';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', 'public', 'models');
const check = process.argv.includes('--check');
const allowTrained = process.argv.includes('--allow-trained-weights');
const started = Date.now();
const files = makeModels();
let differing = 0;
for (const [path, bytes] of files) {
  const target = join(root, path);
  if (check) {
    // Trained weights (scripts/train-demo.ts --bake, train-demo-json.ts --install) keep the layout, hence the size.
    const trained = allowTrained && TRAINED_WEIGHT_FILES.has(path);
    const same =
      existsSync(target) &&
      (trained ? readFileSync(target).byteLength === bytes.byteLength : Buffer.compare(readFileSync(target), Buffer.from(bytes)) === 0);
    if (!same) {
      differing++;
      console.log(`differs: ${path}`);
    }
    continue;
  }
  mkdirSync(dirname(target), { recursive: true });
  writeFileSync(target, bytes);
  console.log(`${path.padEnd(36)} ${bytes.byteLength.toLocaleString('en-US').padStart(12)} bytes`);
}
console.log(`${check ? 'checked' : 'wrote'} ${files.size} files in ${((Date.now() - started) / 1000).toFixed(1)} s`);
if (check && differing > 0) process.exit(1);
