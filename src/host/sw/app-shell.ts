/**
 * The offline app shell: the Service Worker keeps the built app (index.html, the hashed scripts,
 * the web app manifest, icons, and models/index.json) in a Cache Storage cache named after the
 * build, and answers those requests from it first, so Hearth opens and runs with no network once
 * it has been loaded.
 *
 * The file list and version are written into sw.js by the build (vite.config.ts, plugin
 * `hearth-app-shell`, replacing `__HEARTH_APP_SHELL__`): a new build is a byte-different sw.js,
 * which the browser installs as an update; its `install` fills the new cache and `activate`
 * deletes the old ones. Under the dev server there is no list and nothing is cached.
 *
 * Not here: /v1 (always forwarded to the engine, never cached: service-worker.ts checks it
 * first), model weights (the engine's IndexedDB file cache keeps those).
 */

declare const __HEARTH_APP_SHELL__: AppShellManifest | undefined;

export interface AppShellManifest {
  /** Hash of every listed file's bytes: names the cache. */
  version: string;
  /** Absolute paths ("/", "/assets/app-1a2b.js", ...). "/" is index.html. */
  files: string[];
}

const CACHE_PREFIX = 'hearth-shell-';

/** The build's list, or null under the dev server (the identifier is replaced in built sw.js only). */
export function builtAppShell(): AppShellManifest | null {
  return typeof __HEARTH_APP_SHELL__ === 'undefined' ? null : __HEARTH_APP_SHELL__;
}

export class AppShell {
  private readonly paths: Set<string>;
  readonly cacheName: string;

  constructor(
    private readonly manifest: AppShellManifest,
    private readonly scope: ServiceWorkerGlobalScope,
  ) {
    this.paths = new Set(manifest.files);
    this.cacheName = CACHE_PREFIX + manifest.version;
  }

  /** Fills this build's cache; bypasses the HTTP cache so a stale copy never lands in a new version. */
  async install(): Promise<void> {
    const cache = await this.scope.caches.open(this.cacheName);
    await cache.addAll(this.manifest.files.map((path) => new Request(path, { cache: 'reload' })));
  }

  /** Deletes the caches of older builds. */
  async activate(): Promise<void> {
    const names = await this.scope.caches.keys();
    await Promise.all(names.filter((n) => n.startsWith(CACHE_PREFIX) && n !== this.cacheName).map((n) => this.scope.caches.delete(n)));
  }

  /** The cache key a request is answered with, or null when the shell does not cover it. */
  keyFor(request: Request): string | null {
    if (request.method !== 'GET') return null;
    const url = new URL(request.url);
    if (url.origin !== this.scope.location.origin) return null;
    // Every view is a hash route of index.html: a navigation to the app is "/".
    if (request.mode === 'navigate' && (url.pathname === '/' || url.pathname === '/index.html')) return '/';
    return this.paths.has(url.pathname) ? url.pathname : null;
  }

  /**
   * Cache first, network second: a file missing from the cache (evicted, or the install is still
   * running) is fetched as usual. Either way with the cross-origin isolation headers, so the app is
   * isolated on any static host (issue 25: the CPU backend's threads need SharedArrayBuffer).
   */
  async respond(request: Request, key: string): Promise<Response> {
    const cache = await this.scope.caches.open(this.cacheName);
    const hit = await cache.match(key);
    return isolated(hit ?? (await fetch(request)));
  }
}

/**
 * COOP same-origin + COEP require-corp: what makes a page (and its workers) cross-origin isolated,
 * so SharedArrayBuffer and multi-threaded WebAssembly work. Everything Hearth loads is same-origin
 * or a CORS fetch (model downloads), which require-corp allows.
 */
export const ISOLATION_HEADERS: Readonly<Record<string, string>> = {
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Embedder-Policy': 'require-corp',
};

/** The response with the isolation headers added (an opaque or error response is returned as it is). */
export function isolated(res: Response): Response {
  if (res.type === 'opaque' || res.type === 'error' || res.status === 0) return res;
  const headers = new Headers(res.headers);
  for (const [k, v] of Object.entries(ISOLATION_HEADERS)) headers.set(k, v);
  return new Response(res.body, { status: res.status, statusText: res.statusText, headers });
}
