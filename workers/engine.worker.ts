/// <reference lib="webworker" />
// Entry of the engine worker, started by the tab that hosts the engine (src/host/engine-host.ts).
// The behaviour is in src/host/engine-endpoint.ts; this file only hands it the global scope.
import { serveEngine } from '../src/host/engine-endpoint';

serveEngine(self as unknown as DedicatedWorkerGlobalScope);
