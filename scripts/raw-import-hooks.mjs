// Node module hooks that give scripts run outside Vite (bench, model making) the same
// `import text from './x.wgsl?raw'` that Vite and Vitest understand.
import { readFile } from 'node:fs/promises';

export async function resolve(specifier, context, next) {
  if (specifier.endsWith('?raw')) {
    const base = await next(specifier.slice(0, -4), context);
    return { url: base.url + '?raw', shortCircuit: true };
  }
  return next(specifier, context);
}

export async function load(url, context, next) {
  if (url.endsWith('?raw')) {
    const text = await readFile(new URL(url.slice(0, -4)), 'utf8');
    return { format: 'module', source: `export default ${JSON.stringify(text)};`, shortCircuit: true };
  }
  return next(url, context);
}
