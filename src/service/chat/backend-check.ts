/**
 * What the backend serving chat cannot do, refused before anything starts: a 400 that names the
 * field and the reason from the engine's capabilities ("needs WebGPU (this engine runs on the CPU,
 * no WebGPU adapter: ...)"). The service asks the engine what it can do; it never asks which
 * backend runs.
 *
 * Not here: the request's own rules (check.ts), the capabilities (engine/generate/types.ts).
 */
import type { EngineCapabilities } from '../../engine/generate/types';
import type { ModelTokenizer } from '../../engine/model/text/tokenizer';
import { structuredOutputSpec } from '../structured/constraint-spec';
import { ChatRequestError } from './errors';
import { promptLogprobsCount } from './logprobs';
import type { ChatRequest } from './request';

/** Refuses, with a ChatRequestError naming the field, what `caps` says the backend cannot do. */
export function checkBackend(req: ChatRequest, caps: EngineCapabilities, opts: { checkpoint: boolean; tokenizer: ModelTokenizer }): void {
  const refuse = (what: string, param: string) => {
    throw new ChatRequestError(`${what} ${caps.missing}.`, param);
  };
  if (req.use_beam_search && !caps.beamSearch) refuse('use_beam_search', 'use_beam_search');
  if (promptLogprobsCount(req) !== null && !caps.promptLogprobs)
    refuse(req.echo ? 'echo with logprobs (prompt logprobs)' : 'prompt_logprobs', req.echo ? 'echo' : 'prompt_logprobs');
  if (opts.checkpoint && !caps.loraAdapters) {
    refuse(`The model ${req.model} is a checkpoint: its LoRA adapter`, 'model');
  }
  if (!caps.structuredOutputs) {
    const spec = structuredOutputSpec(req);
    if (spec) refuse(`${spec.param} (structured outputs, which mask each step with a grammar)`, spec.param);
  }
  if (!caps.multiTokenBadWords && opts.tokenizer.badWordsIds(req.bad_words ?? []).some((w) => w.length > 1)) {
    refuse('bad_words longer than one token', 'bad_words');
  }
}
