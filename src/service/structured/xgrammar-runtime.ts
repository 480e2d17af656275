/**
 * The xgrammar runtime: one instance of @mlc-ai/web-xgrammar (its emscripten WASM module) that
 * works the same in the engine's module Web Worker (a Vite build), in Vitest and in Node scripts,
 * and that survives the grammars it refuses.
 *
 * Why it is loaded from its source text instead of `import`:
 * - The package is a UMD bundle. Imported as ESM it exports nothing, writes `globalThis.xgrammar`,
 *   and in Node it needs `require` and `__filename` globals. Evaluated here as a CommonJS body
 *   with its own `exports`, it exports its classes and touches no global.
 * - Its WASM is inlined as a base64 data URI, so nothing is fetched (it works offline and in a
 *   Vite build without asset handling). The environment globals it probes (`process`,
 *   `importScripts`, `window`, `document`, `location`) are shadowed so that it takes one path
 *   everywhere: no Node `fs`, no XHR, no process handlers.
 * - xgrammar reports an invalid schema, regex or grammar by printing "[FATAL] <reason>" and
 *   calling `abort()`: the call throws `RuntimeError: Aborted()` and the instance is left with a
 *   leaked WASM stack (thousands of aborts later a valid grammar aborts too) and, when its
 *   compiler cache is on, a future that hangs the next identical compile. So the runtime reads the
 *   reason from a `console` of its own, turns it into an XGrammarError, and replaces the instance
 *   after any abort: the next caller gets a fresh one (an evaluation of the source, ~100 ms).
 *   Objects of a replaced instance (matchers of requests in flight) keep working on it.
 * - The matcher's bitmask is needed synchronously (TokenConstraint.fillNextTokenBitmask), but the
 *   package only offers an async getter around the binding's `vecIntToView`; one line of the
 *   source is patched (and checked) to hand the binding out.
 * Both behaviours are those of @mlc-ai/web-xgrammar 0.1.27 (pinned in package.json; no upstream
 * issue found): `Grammar.fromEBNF('root ::= ("a"')` throws `RuntimeError: Aborted()`, and
 * `GrammarMatcher.getNextTokenBitmask()` returns a Promise. The canaries in
 * test/unit/structured/xgrammar-canaries.test.ts fail when an upgrade changes either.
 *
 * Not here: tokenizer adaptation (tokenizer-info.ts), compiling constraints (grammar-compiler.ts),
 * matching (grammar-matcher.ts).
 * Reference: https://github.com/mlc-ai/xgrammar/tree/main/web (the package's source).
 */
import type * as XG from '@mlc-ai/web-xgrammar';
import xgrammarSource from '@mlc-ai/web-xgrammar/lib/index.js?raw';

/** The package's exports (Grammar, GrammarCompiler, GrammarMatcher, TokenizerInfo, ...). */
export type XGrammarLib = Pick<
  typeof XG,
  'Grammar' | 'GrammarCompiler' | 'CompiledGrammar' | 'GrammarMatcher' | 'TokenizerInfo' | 'Testings'
>;

/** An embind-owned C++ object: freed with delete(). */
export interface EmbindHandle {
  delete(): void;
}

/** The C++ GrammarMatcher as embind exposes it (the package wraps the same calls). */
export interface MatcherHandle extends EmbindHandle {
  AcceptToken(tokenId: number, verbose: boolean): boolean;
  GetNextTokenBitmask(vocabSize: number): EmbindHandle;
  IsTerminated(): boolean;
  FindJumpForwardString(): string;
  Rollback(numTokens: number): void;
  Reset(): void;
}

/** The parts of the emscripten binding Hearth calls directly. */
interface Binding {
  GrammarMatcher: new (
    compiled: unknown,
    overrideStopTokens: EmbindHandle | undefined,
    terminateWithoutStopToken: boolean,
    maxRollbackTokens: number,
  ) => MatcherHandle;
  vecIntToView(vector: EmbindHandle): Int32Array;
  vecIntFromJSArray(values: number[]): EmbindHandle;
}

/** xgrammar refused its input; `reason` is its own message without the source location. */
export class XGrammarError extends Error {
  override name = 'XGrammarError';
  constructor(readonly reason: string) {
    super(reason);
  }
}

// The one line of the package that learns the binding; patched to also hand it to Hearth.
const BINDING_LINE = 'binding = await Module();';

/** Names the package's body reads as globals, shadowed by the arguments of its evaluation. */
const SHADOWED = [
  'exports',
  'module',
  'require',
  '__filename',
  'process',
  'importScripts',
  'window',
  'document',
  'location',
  'console',
  '__hearthBinding',
];

let factory: ((...args: unknown[]) => void) | null = null;

function packageFactory(): (...args: unknown[]) => void {
  if (factory) return factory;
  const at = xgrammarSource.indexOf(BINDING_LINE);
  if (at < 0 || xgrammarSource.indexOf(BINDING_LINE, at + 1) >= 0) {
    throw new Error(`@mlc-ai/web-xgrammar changed: "${BINDING_LINE}" is not in its lib/index.js exactly once; update xgrammar-runtime.ts`);
  }
  const patched =
    xgrammarSource.slice(0, at) + BINDING_LINE + ' __hearthBinding(binding);' + xgrammarSource.slice(at + BINDING_LINE.length);
  // eslint-disable-next-line @typescript-eslint/no-implied-eval -- see the header: a private evaluation of a vendored UMD body
  factory = new Function(...SHADOWED, patched) as (...args: unknown[]) => void;
  return factory;
}

/** "[FATAL] /path/json_schema_converter.cc:885: Check failed: (...) is false: Type should be a string" -> the reason. */
function fatalReason(lines: readonly string[]): string | null {
  const fatal = lines.find((l) => l.startsWith('[FATAL]'));
  if (!fatal) return null;
  let text = fatal.replace(/^\[FATAL\]\s*\S+:\d+:\s*/, '');
  const failed = /^Check failed: \(.*?\) is false: ([\s\S]*)$/.exec(text);
  if (failed) text = failed[1];
  return text.trim();
}

/** One evaluation of the package: its classes, its binding, and the lines it printed. */
class XGrammarInstance {
  readonly lib: XGrammarLib;
  private readonly printed: string[] = [];
  private binding: Binding | null = null;
  /** An abort happened: this instance takes no new work. */
  aborted = false;

  constructor() {
    const exports: Record<string, unknown> = {};
    const module = { exports };
    const printed = this.printed;
    const print =
      (level: 'log' | 'warn') =>
      (...args: unknown[]) => {
        const line = args.map(String).join(' ');
        printed.push(line);
        if (printed.length > 64) printed.shift();
        // Warnings (a regex anchor in the middle, ...) still reach the developer console.
        if (!line.startsWith('[FATAL]') && !line.startsWith('Aborted(')) console[level]('[xgrammar]', line);
      };
    const quietConsole = { log: print('log'), error: print('warn'), warn: print('warn'), info: print('log'), debug: () => {} };
    const fakeRequire = (name: string) => {
      throw new Error(`xgrammar asked for the Node module "${name}"; the runtime evaluates it as a plain script`);
    };
    packageFactory()(
      exports,
      module,
      fakeRequire,
      'xgrammar.js',
      undefined,
      undefined,
      undefined,
      undefined,
      { href: 'https://hearth.invalid/xgrammar.js' },
      quietConsole,
      (b: Binding) => {
        this.binding = b;
      },
    );
    this.lib = exports as unknown as XGrammarLib;
  }

  /** The binding, available once any async call of the package has run. */
  requireBinding(): Binding {
    if (!this.binding) throw new Error('xgrammar binding not initialised: call XGrammarRuntime.load() first');
    return this.binding;
  }

  /** Forgets what was printed so far (calls are serialised: what follows belongs to the next one). */
  clearPrinted(): void {
    this.printed.length = 0;
  }

  get printedLines(): readonly string[] {
    return this.printed;
  }
}

/**
 * Serialises the calls into xgrammar (one WASM instance, one thread) and maps its aborts to
 * XGrammarError. `generation` counts instances: caches keyed on handles of an older generation
 * must be rebuilt.
 */
export class XGrammarRuntime {
  private instance: XGrammarInstance;
  private queue: Promise<unknown> = Promise.resolve();
  private gen = 1;

  private constructor(instance: XGrammarInstance) {
    this.instance = instance;
  }

  private static shared: Promise<XGrammarRuntime> | null = null;

  /** The process-wide runtime (the WASM is instantiated on first use). */
  static load(): Promise<XGrammarRuntime> {
    if (!XGrammarRuntime.shared) {
      XGrammarRuntime.shared = (async () => {
        const instance = await XGrammarRuntime.startInstance();
        return new XGrammarRuntime(instance);
      })();
      XGrammarRuntime.shared.catch(() => (XGrammarRuntime.shared = null));
    }
    return XGrammarRuntime.shared;
  }

  private static async startInstance(): Promise<XGrammarInstance> {
    const instance = new XGrammarInstance();
    // Any async call instantiates the WASM and hands out the binding.
    const info = await instance.lib.TokenizerInfo.createTokenizerInfo([]);
    info.dispose();
    instance.requireBinding();
    return instance;
  }

  /** Bumped each time an abort replaced the instance. */
  get generation(): number {
    return this.gen;
  }

  /** The current instance's classes, for synchronous calls on objects it made. */
  get lib(): XGrammarLib {
    return this.instance.lib;
  }

  /**
   * Runs `fn` alone against the current instance. An abort inside becomes an XGrammarError with
   * xgrammar's reason, and the instance is replaced before the next call.
   */
  run<T>(fn: (lib: XGrammarLib, generation: number) => Promise<T> | T): Promise<T> {
    const next = this.queue.then(async () => {
      if (this.instance.aborted) {
        this.instance = await XGrammarRuntime.startInstance();
        this.gen += 1;
      }
      const instance = this.instance;
      instance.clearPrinted();
      try {
        return await fn(instance.lib, this.gen);
      } catch (e) {
        const reason = fatalReason(instance.printedLines);
        // An abort, or a C++ exception escaping as its pointer (a number): the WASM stack was not
        // unwound, so this instance is done.
        if (e instanceof WebAssembly.RuntimeError || typeof e === 'number' || reason !== null) {
          instance.aborted = true;
          throw new XGrammarError(reason ?? (typeof e === 'number' ? 'xgrammar rejected it (no reason given)' : (e as Error).message));
        }
        throw e;
      }
    });
    this.queue = next.catch(() => undefined);
    return next;
  }

  /**
   * A C++ GrammarMatcher on `compiled`, made by the instance that compiled it (`binding`, taken
   * with bindingRef() in the same run: the current instance may have been replaced since).
   * Made through the binding so that no TokenizerInfo wrapper leaks per matcher, as the
   * package's own factory does.
   */
  static createMatcherHandle(binding: BindingRef, compiled: XG.CompiledGrammar, maxRollbackTokens: number): MatcherHandle {
    return new binding.binding.GrammarMatcher(compiled.handle, undefined, false, maxRollbackTokens);
  }

  /**
   * The matcher's next-token bitmask copied into `out` (ceil(vocabSize / 32) words, bit set =
   * allowed), synchronously. `binding` must be the one of the instance that made the matcher.
   */
  static fillBitmask(binding: BindingRef, handle: MatcherHandle, vocabSize: number, out: Int32Array): void {
    const vector = handle.GetNextTokenBitmask(vocabSize);
    try {
      out.set(binding.binding.vecIntToView(vector));
    } finally {
      vector.delete();
    }
  }

  /** A reference to the current instance's binding, kept by matchers so they outlive a replacement. */
  bindingRef(): BindingRef {
    return { binding: this.instance.requireBinding() };
  }
}

/** Opaque: the binding of the instance that made a matcher. */
export interface BindingRef {
  readonly binding: Binding;
}
