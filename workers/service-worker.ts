/// <reference lib="webworker" />
// Entry of the Service Worker (built as /sw.js, root scope). The behaviour is in
// src/host/sw/service-worker.ts; this file only hands it the global scope.
import { installServiceWorker } from '../src/host/sw/service-worker';

installServiceWorker(self as unknown as ServiceWorkerGlobalScope);
