// What the backend serving chat cannot do is refused before anything starts: a 400 that names the
// field and the backend's reason. The CPU backend's capabilities refuse beam search, prompt
// logprobs, structured outputs, checkpoints and multi-token bad_words; WebGPU's refuse nothing.
import { beforeAll, describe, expect, it } from 'vitest';
import type { EngineCapabilities, ServedModel } from '../../../src/engine/generate/types';
import { checkBackend } from '../../../src/service/chat/backend-check';
import { ChatRequestError } from '../../../src/service/chat/errors';
import type { ChatRequest } from '../../../src/service/chat/request';
import { servedModel } from './fixtures';

const missing = 'needs WebGPU (this engine runs on the CPU, no WebGPU adapter: test)';
const cpu: EngineCapabilities = {
  backend: 'cpu',
  description: 'CPU: llama.cpp (WebAssembly), 1 thread',
  training: false,
  beamSearch: false,
  promptLogprobs: false,
  structuredOutputs: false,
  loraAdapters: false,
  multiTokenBadWords: false,
  missing,
};
const webgpu: EngineCapabilities = {
  ...cpu,
  backend: 'webgpu',
  beamSearch: true,
  promptLogprobs: true,
  structuredOutputs: true,
  loraAdapters: true,
  multiTokenBadWords: true,
  missing: '',
};
const base: ChatRequest = { model: 'hearth/tiny-chat', messages: [{ role: 'user', content: 'hi' }] };

let served: ServedModel;
beforeAll(async () => {
  served = await servedModel('tiny-chat');
});

function refusal(caps: EngineCapabilities, extra: Partial<ChatRequest>, checkpoint = false): ChatRequestError | null {
  try {
    checkBackend({ ...base, ...extra }, caps, { checkpoint, tokenizer: served.tokenizer });
    return null;
  } catch (e) {
    if (e instanceof ChatRequestError) return e;
    throw e;
  }
}

describe('checkBackend', () => {
  it.each([
    ['use_beam_search', { use_beam_search: true, n: 2 }, /^use_beam_search needs WebGPU \(this engine runs on the CPU/],
    ['prompt_logprobs', { prompt_logprobs: 1 }, /^prompt_logprobs needs WebGPU/],
    ['echo', { echo: true, logprobs: true }, /^echo with logprobs \(prompt logprobs\) needs WebGPU/],
    [
      'response_format json_object',
      { response_format: { type: 'json_object' } },
      /^response_format json_object \(structured outputs.*\) needs WebGPU/,
    ],
    ['bad_words', { bad_words: ['hello world and more'] }, /^bad_words longer than one token needs WebGPU/],
  ] as const)('refuses %s on the CPU backend, naming the field', (param, extra, message) => {
    const e = refusal(cpu, extra as Partial<ChatRequest>);
    expect(e?.status).toBe(400);
    expect(e?.param).toBe(param);
    expect(e?.message).toMatch(message);
    expect(refusal(webgpu, extra as Partial<ChatRequest>)).toBeNull();
  });

  it('refuses a checkpoint (a LoRA adapter) on the CPU backend, and takes a plain request', () => {
    const e = refusal(cpu, { model: 'wandb-artifact:///e/p/m:step3' }, true);
    expect(e).toMatchObject({ param: 'model', message: expect.stringMatching(/is a checkpoint: its LoRA adapter needs WebGPU/) });
    expect(
      refusal(cpu, { temperature: 0.5, top_k: 3, logprobs: true, top_logprobs: 2, n: 2, seed: 1n, stop: ['x'], min_tokens: 2 }),
    ).toBeNull();
  });

  it('takes bad_words that are one token each on the CPU backend (a -inf bias there)', () => {
    const single = served.tokenizer.badWordsIds(['a']);
    expect(single.every((w) => w.length === 1)).toBe(true);
    expect(refusal(cpu, { bad_words: ['a'] })).toBeNull();
  });
});
