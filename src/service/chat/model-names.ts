/**
 * Parsing the `model` of a chat request into what it names, before anything is looked up:
 * a base model id (`hearth/tiny-chat`), or a registered model and optionally one of its steps,
 * in every form ART's clients have used (docs/reference/art-compat.md §5):
 *
 *   wandb-artifact:///entity/project/name[:step{N}]   (also with two slashes, `wandb-artifact://`)
 *   entity/project/name[:step{N}]                      (the name before ART PR #425)
 *   name@N, entity/project/name@N                      (ART's other backends)
 *   <model id>[:step{N}], <model id>@N                 (Hearth's registered model id)
 *   name[:step{N}]                                      (a model name unique among the caller's)
 *
 * `:latest` is accepted as "the latest step", like an artifact alias. Which of the forms a bare
 * string is (a base model id also contains a slash) is decided by resolve-model.ts, which knows
 * the catalogue and the caller's models.
 *
 * Not here: looking anything up (resolve-model.ts).
 */

export interface ParsedModelName {
  /** The name without its step suffix and artifact prefix. */
  path: string;
  /** `path` split on "/". */
  parts: string[];
  /** The requested step, or null for the latest. */
  step: number | null;
  /** The name carried the `wandb-artifact://` prefix, so it cannot be a base model id. */
  artifact: boolean;
}

const ARTIFACT_PREFIX = /^wandb-artifact:\/\/\/?/;
const STEP_SUFFIX = /^(.*?)(?::step(\d+)|@(\d+)|:latest)$/;

/** Splits prefix, path and step; returns null for strings that no form accepts. */
export function parseModelName(name: string): ParsedModelName | null {
  let rest = name.trim();
  const artifact = ARTIFACT_PREFIX.test(rest);
  rest = rest.replace(ARTIFACT_PREFIX, '');
  let step: number | null = null;
  const m = STEP_SUFFIX.exec(rest);
  if (m) {
    rest = m[1];
    const digits = m[2] ?? m[3];
    if (digits !== undefined) {
      step = Number(digits);
      if (!Number.isSafeInteger(step)) return null;
    }
  }
  if (rest.length === 0) return null;
  const parts = rest.split('/');
  if (parts.some((p) => p.length === 0) || parts.length > 3) return null;
  if (artifact && parts.length !== 3) return null;
  return { path: rest, parts, step, artifact };
}

/** The canonical inference name of a registered model's step (what GET /v1/models lists). */
export function checkpointName(model: { entity: string; project: string; name: string }, step: number | null): string {
  const base = `wandb-artifact:///${model.entity}/${model.project}/${model.name}`;
  return step === null ? base : `${base}:step${step}`;
}
