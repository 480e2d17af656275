// The xgrammar runtime: the package evaluated on its own (no globals), its refusals as errors
// with xgrammar's reason, a fresh WASM instance after each abort, and objects of the old instance
// (a matcher of a request in flight) still working after the switch.
import { describe, expect, it } from 'vitest';
import { XGrammarError, XGrammarRuntime } from '../../../src/service/structured/xgrammar-runtime';
import { LruCache } from '../../../src/service/structured/lru-cache';

describe('XGrammarRuntime', () => {
  it('loads without touching globals', async () => {
    const runtime = await XGrammarRuntime.load();
    expect(await XGrammarRuntime.load()).toBe(runtime);
    expect((globalThis as Record<string, unknown>).xgrammar).toBeUndefined();
    expect(typeof runtime.lib.GrammarCompiler.createGrammarCompiler).toBe('function');
  });

  it('turns an abort into an XGrammarError with the reason, and replaces the instance', async () => {
    const runtime = await XGrammarRuntime.load();
    const { compiler, grammar } = await runtime.run(async (lib) => {
      const info = await lib.TokenizerInfo.createTokenizerInfo(['a', 'b', '</s>'], 'raw', false, 3, [2]);
      const compiler = await lib.GrammarCompiler.createGrammarCompiler(info, false);
      return { compiler, grammar: await compiler.compileGrammar('root ::= "a"+ "b"') };
    });
    const binding = runtime.bindingRef();
    const handle = XGrammarRuntime.createMatcherHandle(binding, grammar, -1);
    const generation = runtime.generation;
    const error = await runtime.run(() => compiler.compileGrammar('root ::= ("a"')).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(XGrammarError);
    expect((error as XGrammarError).reason).toMatch(/^EBNF parser error at line 1, column \d+: /);
    // The next call runs on a fresh instance.
    const ok = await runtime.run(async (lib, gen) => {
      expect(gen).toBe(generation + 1);
      return lib.Grammar.fromEBNF('root ::= "x"');
    });
    expect(ok.toString()).toContain('root ::=');
    expect(runtime.generation).toBe(generation + 1);
    // The matcher made before the abort still walks its grammar.
    const mask = new Int32Array(1);
    XGrammarRuntime.fillBitmask(binding, handle, 3, mask);
    expect(mask[0] & 0b111).toBe(0b001);
    expect(handle.AcceptToken(0, false)).toBe(true);
    expect(handle.AcceptToken(1, false)).toBe(true);
    expect(handle.AcceptToken(2, false)).toBe(true);
    expect(handle.IsTerminated()).toBe(true);
    handle.delete();
  });

  it('errors that are not xgrammar aborts pass through and keep the instance', async () => {
    const runtime = await XGrammarRuntime.load();
    const generation = runtime.generation;
    await expect(runtime.run(() => Promise.reject(new RangeError('mine')))).rejects.toThrow(RangeError);
    await runtime.run(() => undefined);
    expect(runtime.generation).toBe(generation);
  });
});

describe('LruCache', () => {
  it('evicts the least recently used entry past capacity, handing it to onEvict', () => {
    const evicted: string[] = [];
    const cache = new LruCache<string, string>(2, (v) => evicted.push(v));
    cache.set('a', 'A');
    cache.set('b', 'B');
    expect(cache.get('a')).toBe('A');
    cache.set('c', 'C');
    expect(evicted).toEqual(['B']);
    expect(cache.keys()).toEqual(['a', 'c']);
    cache.set('a', 'A2');
    expect(evicted).toEqual(['B', 'A']);
    expect(cache.has('b')).toBe(false);
    cache.forget();
    expect(cache.size).toBe(0);
    expect(evicted).toEqual(['B', 'A']);
    expect(() => new LruCache(0)).toThrow(/at least 1/);
  });
});
