// The API reference page's endpoint list: every endpoint the README documents is on it, and its
// examples are valid JavaScript naming this origin.
import { readFileSync } from 'node:fs';
import { expect, it } from 'vitest';
import { ENDPOINTS, fetchExample, openaiExample } from '../../../src/ui/api-endpoints';

const AsyncFunction = Object.getPrototypeOf(async () => {}).constructor as new (...args: string[]) => unknown;
/** `/v1/preview/models/{id}/log` and `/v1/preview/models/<model id>/log` name the same route. */
const shape = (path: string) => path.replace(/\{[^}]+\}|<[^>]+>/g, '*');

it('lists every endpoint of the README', () => {
  const readme = readFileSync(new URL('../../../README.md', import.meta.url), 'utf8');
  const documented = new Set<string>();
  for (const m of readme.matchAll(/`((?:GET|POST|DELETE) \/v1[^`]*)`/g))
    documented.add(`${m[1].split(' ')[0]} ${shape(m[1].split(' ')[1].split('?')[0])}`);
  const listed = new Set(ENDPOINTS.map((e) => `${e.method} ${shape(e.path)}`));
  expect(documented.size).toBeGreaterThan(20);
  expect([...documented].filter((d) => !listed.has(d))).toEqual([]);
});

it('writes examples that parse and use this origin', () => {
  for (const e of ENDPOINTS) {
    const code = fetchExample(e, 'http://127.0.0.1:5173');
    expect(code).toContain(`'http://127.0.0.1:5173${e.path}'`);
    expect(() => new AsyncFunction('key', code)).not.toThrow();
    const sdk = openaiExample(e, 'http://127.0.0.1:5173');
    if (sdk) expect(sdk).toContain("baseURL: 'http://127.0.0.1:5173/v1'");
  }
});
