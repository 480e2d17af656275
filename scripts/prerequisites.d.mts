// Types of prerequisites.mjs (plain JavaScript so that any Node runs it), for its unit test.

export interface Machine {
  nodeVersion: string;
  platform: string;
  env: Record<string, string | undefined>;
  /** The repository root (node_modules/.bin is looked up under it). */
  root: string;
  exists(path: string): boolean;
  /** Whether the dynamic linker finds this soname. */
  loads(soname: string): boolean;
}

export interface Missing {
  what: string;
  install: string;
}

export function nodeIsSupported(version: string): boolean;
export function missingPrerequisites(command: string, machine: Machine): Missing[];
export function thisMachine(): Machine;
export function prerequisitesMessage(command: string, missing: Missing[]): string;
