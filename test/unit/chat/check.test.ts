// checkChatRequest and the context-length rule as pure functions: each rule fails with vLLM's
// exact message (docs/reference/vllm-chat.md §2), passes on its boundary, and uses the model's defaults.
import { describe, expect, it } from 'vitest';
import type { GenerationDefaults } from '../../../src/engine/model/config/generation-config';
import { checkChatRequest, MAX_CHOICES, type ChatModelLimits } from '../../../src/service/chat/check';
import { ChatRequestError } from '../../../src/service/chat/errors';
import { maxTokensFor } from '../../../src/service/chat/max-tokens';
import type { ChatRequest } from '../../../src/service/chat/request';

const model: ChatModelLimits = { vocabSize: 4096, maxModelLen: 2048, generation: { eosTokenIds: [2], bosTokenId: null, padTokenId: null } };
const base: ChatRequest = { messages: [{ role: 'user', content: 'hi' }] };

function error(extra: Partial<ChatRequest>, m: ChatModelLimits | null = model): ChatRequestError | undefined {
  try {
    checkChatRequest({ ...base, ...extra }, m);
  } catch (e) {
    if (e instanceof ChatRequestError) return e;
    throw e;
  }
  return undefined;
}

const message = (extra: Partial<ChatRequest>, m: ChatModelLimits | null = model) => error(extra, m)?.message;

describe('checkChatRequest: request rules (before the model is known)', () => {
  it('accepts a plain request, with or without the model', () => {
    expect(error({}, null)).toBeUndefined();
    expect(error({})).toBeUndefined();
  });

  it('1. stream_options only with stream (an empty object passes, as in Python)', () => {
    expect(message({ stream_options: { include_usage: true } }, null)).toBe('Stream options can only be defined when `stream=True`.');
    expect(error({ stream_options: { include_usage: true } })?.param).toBe('stream_options');
    expect(message({ stream_options: {} }, null)).toBeUndefined();
    expect(message({ stream: true, stream_options: { include_usage: true } }, null)).toBeUndefined();
  });

  it('2. logprobs rules', () => {
    expect(message({ stream: true, prompt_logprobs: 1 }, null)).toBe('`prompt_logprobs` are not available when `stream=True`.');
    expect(message({ stream: true, prompt_logprobs: 0 }, null)).toBeUndefined();
    expect(message({ prompt_logprobs: -1 }, null)).toBe('`prompt_logprobs` must be a positive value.');
    expect(message({ top_logprobs: -1, logprobs: true }, null)).toBe('`top_logprobs` must be a positive value.');
    expect(message({ top_logprobs: 2 }, null)).toBe('when using `top_logprobs`, `logprobs` must be set to true.');
    expect(message({ top_logprobs: 2, logprobs: false }, null)).toBe('when using `top_logprobs`, `logprobs` must be set to true.');
    expect(message({ top_logprobs: 0 }, null)).toBeUndefined();
    expect(message({ top_logprobs: 2, logprobs: true }, null)).toBeUndefined();
  });

  it('3. structured outputs: one kind at most; single constraints pass to the compiler', () => {
    expect(message({ structured_outputs: { json: {}, regex: 'a+' } }, null)).toBe(
      "You can only use one kind of constraints for structured outputs ('json', 'regex' or 'choice').",
    );
    expect(message({ structured_outputs: { choice: ['a', 'b'] } }, null)).toBeUndefined();
    expect(message({ structured_outputs: {} }, null)).toBeUndefined();
    expect(message({ response_format: { type: 'json_object' } }, null)).toBeUndefined();
    expect(message({ response_format: { type: 'json_schema', json_schema: { name: 'x', schema: {} } } }, null)).toBeUndefined();
    expect(message({ response_format: { type: 'text' } }, null)).toBeUndefined();
  });

  it('4. tool_choice with vLLM messages; "auto", "none", "required" and a named tool pass', () => {
    const tools = [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object' } } }];
    expect(message({ tool_choice: 'auto' }, null)).toBe('When using `tool_choice`, `tools` must be set.');
    expect(message({ tool_choice: 'none' }, null)).toBeUndefined();
    expect(message({ tool_choice: null }, null)).toBeUndefined();
    expect(message({ tools, tool_choice: 'sometimes' }, null)).toBe(
      'Invalid value for `tool_choice`: sometimes! Only named tools, "none", "auto" or "required" are supported.',
    );
    const usage = 'Correct usage: `{"type": "function", "function": {"name": "my_function"}}`';
    expect(message({ tools, tool_choice: { type: 'function' } }, null)).toBe(
      `Invalid value for \`function\`: \`None\` in \`tool_choice\`! ${usage}`,
    );
    expect(message({ tools, tool_choice: { function: {} } }, null)).toBe(
      `Expected field \`name\` in \`function\` in \`tool_choice\`! ${usage}`,
    );
    expect(message({ tools, tool_choice: { function: { name: '' } } }, null)).toBe(
      `Invalid \`name\` in \`function\`: \`\` in \`tool_choice\`! ${usage}`,
    );
    expect(message({ tools, tool_choice: { type: 'function', function: { name: 'other' } } }, null)).toBe(
      'The tool specified in `tool_choice` does not match any of the specified `tools`',
    );
    expect(message({ tools, tool_choice: 'auto' }, null)).toBeUndefined();
    expect(message({ tools }, null)).toBeUndefined();
    expect(message({ tools, tool_choice: 'required' }, null)).toBeUndefined();
    expect(message({ tools, tool_choice: { type: 'function', function: { name: 'get_weather' } } }, null)).toBeUndefined();
    // vLLM v0.11: "required" with no tools behaves as "none".
    expect(message({ tools: [], tool_choice: 'required' }, null)).toBeUndefined();
  });

  it('5-8. generation prompt, cache salt, priority, logits processors', () => {
    expect(message({ continue_final_message: true, add_generation_prompt: true }, null)).toBe(
      'Cannot set both `continue_final_message` and `add_generation_prompt` to True.',
    );
    expect(message({ continue_final_message: true }, null)).toBeUndefined();
    expect(message({ cache_salt: '' }, null)).toBe("Parameter 'cache_salt' must be a non-empty string if provided.");
    expect(message({ cache_salt: 'salt' }, null)).toBeUndefined();
    expect(message({ priority: 3 }, null)).toBe('Got priority 3 but Priority scheduling is not enabled.');
    expect(message({ priority: -1 }, null)).toBe('Got priority -1 but Priority scheduling is not enabled.');
    expect(message({ priority: 0 }, null)).toBeUndefined();
    expect(message({ logits_processors: ['my.Processor'] }, null)).toMatch(
      /^The `logits_processors` argument is not supported by this server\./,
    );
    expect(message({ logits_processors: [] }, null)).toBeUndefined();
  });

  it('9. n', () => {
    expect(message({ n: 0 }, null)).toBe('n must be at least 1, got 0.');
    expect(message({ n: MAX_CHOICES + 1 }, null)).toBe(`n must be at most ${MAX_CHOICES}, got ${MAX_CHOICES + 1}.`);
    expect(message({ n: MAX_CHOICES }, null)).toBeUndefined();
  });
});

describe('checkChatRequest: sampling and model rules', () => {
  it('10. ranges, with Python float formatting in the messages', () => {
    expect(message({ temperature: -1 })).toBe('temperature must be non-negative, got -1.0.');
    expect(message({ temperature: 0 })).toBeUndefined();
    expect(message({ top_p: 0 })).toBe('top_p must be in (0, 1], got 0.0.');
    expect(message({ top_p: 1.5 })).toBe('top_p must be in (0, 1], got 1.5.');
    expect(message({ top_p: 1 })).toBeUndefined();
    expect(message({ top_k: -2 })).toBe('top_k must be 0 (disable), or at least 1, got -2.');
    expect(message({ top_k: -1 })).toBeUndefined();
    expect(message({ min_p: 1.01 })).toBe('min_p must be in [0, 1], got 1.01.');
    expect(message({ presence_penalty: 2.5 })).toBe('presence_penalty must be in [-2, 2], got 2.5.');
    expect(message({ frequency_penalty: -3 })).toBe('frequency_penalty must be in [-2, 2], got -3.0.');
    expect(message({ repetition_penalty: 0 })).toBe('repetition_penalty must be greater than zero, got 0.0.');
    expect(message({ min_tokens: -1 })).toBe('min_tokens must be greater than or equal to 0, got -1.');
    expect(message({ stop: ['ok', ''] })).toBe('stop cannot contain an empty string.');
    expect(message({ stop: '' })).toBe('stop cannot contain an empty string.');
    expect(message({ bad_words: ['bad', ''] })).toBe("bad_words cannot contain an empty string. Got bad_words=['bad', '']");
  });

  it('11. greedy decoding allows one choice; beam search keeps n beams', () => {
    expect(message({ temperature: 0, n: 2 })).toBe('n must be 1 when using greedy sampling, got 2.');
    expect(message({ temperature: 0, n: 2, use_beam_search: true })).toBeUndefined();
    expect(message({ temperature: 0.5, n: 2 })).toBeUndefined();
    // The model's generation_config temperature is the default.
    const greedyModel = { ...model, generation: { ...model.generation, temperature: 0 } };
    expect(message({ n: 3 }, greedyModel)).toBe('n must be 1 when using greedy sampling, got 3.');
    expect(message({ n: 3, temperature: 1 }, greedyModel)).toBeUndefined();
  });

  it('12. logprob counts are capped at 20', () => {
    expect(message({ logprobs: true, top_logprobs: 21 })).toBe('Requested sample logprobs of 21, which is greater than max allowed: 20');
    expect(message({ logprobs: true, top_logprobs: 20 })).toBeUndefined();
    expect(message({ prompt_logprobs: 21 })).toBe('Requested prompt logprobs of 21, which is greater than max allowed: 20');
    // echo without prompt_logprobs takes top_logprobs.
    expect(message({ echo: true, logprobs: true, top_logprobs: 20 })).toBeUndefined();
  });

  it('13. token ids against the vocabulary', () => {
    expect(message({ logit_bias: { '5000': 1, '12': 2, '-1': 3 } })).toBe(
      'token_id(s) [5000, -1] in logit_bias contain out-of-vocab token ids. Vocabulary size: 4096',
    );
    expect(message({ logit_bias: { abc: 1 } })).toBe("invalid literal for int() with base 10: 'abc'");
    expect(message({ logit_bias: { ' 7 ': 1, '4095': -100 } })).toBeUndefined();
    expect(message({ stop_token_ids: [4096, 4096, 1] })).toBe(
      'token_id(s) [4096] in stop_token_ids contain out-of-vocab token ids. Vocabulary size: 4096',
    );
    expect(message({ allowed_token_ids: [] })).toBe('allowed_token_ids is not None and empty!');
    expect(message({ allowed_token_ids: [1, 9999] })).toBe('allowed_token_ids contains out-of-vocab token id!');
    expect(message({ allowed_token_ids: [1, 4095] })).toBeUndefined();
  });

  it('14. truncate_prompt_tokens at most max_model_len', () => {
    expect(message({ truncate_prompt_tokens: 2049 })).toBe(
      'truncate_prompt_tokens value (2049) is greater than max_model_len (2048). Please, select a smaller truncation size.',
    );
    expect(message({ truncate_prompt_tokens: 2048 })).toBeUndefined();
    expect(message({ truncate_prompt_tokens: -1 })).toBeUndefined();
  });

  it('15. beam search refuses controls it would ignore', () => {
    for (const extra of [
      { stop: ['x'] },
      { stop_token_ids: [3] },
      { min_tokens: 2 },
      { logit_bias: { '3': 1 } },
      { allowed_token_ids: [1] },
      { bad_words: ['no'] },
      { top_p: 0.5 },
      { top_k: 5 },
      { min_p: 0.1 },
      { repetition_penalty: 1.2 },
      { presence_penalty: 0.5 },
      { frequency_penalty: 0.5 },
    ] as Partial<ChatRequest>[]) {
      const field = Object.keys(extra)[0];
      const e = error({ use_beam_search: true, n: 2, ...extra });
      expect(e?.message, field).toMatch(new RegExp(`^use_beam_search cannot be combined with \`${field}\``));
      expect(e?.param).toBe(field);
    }
    expect(message({ use_beam_search: true, n: 3, top_k: -1, top_p: 1, length_penalty: 0.5, temperature: 0 })).toBeUndefined();
  });
});

describe('maxTokensFor: the context-length rule', () => {
  const m: { maxModelLen: number; generation: GenerationDefaults } = {
    maxModelLen: 100,
    generation: { eosTokenIds: [], bosTokenId: null, padTokenId: null },
  };
  const max = (extra: Partial<ChatRequest>, prompt: number, mm = m) => maxTokensFor({ ...base, ...extra }, prompt, mm);
  const fails = (extra: Partial<ChatRequest>, prompt: number, mm = m) => {
    try {
      max(extra, prompt, mm);
    } catch (e) {
      return (e as Error).message;
    }
    return undefined;
  };

  it('defaults to what is left of the context, capped by generation_config max_new_tokens', () => {
    expect(max({}, 30)).toBe(70);
    expect(max({}, 30, { ...m, generation: { ...m.generation, maxNewTokens: 16 } })).toBe(16);
    expect(max({ max_tokens: 10 }, 30)).toBe(10);
    expect(max({ max_completion_tokens: 12, max_tokens: 50 }, 30)).toBe(12);
    // 0 falls through to max_tokens, as Python's `or`.
    expect(max({ max_completion_tokens: 0, max_tokens: 9 }, 30)).toBe(9);
    expect(max({ max_tokens: 70 }, 30)).toBe(70);
  });

  it('refuses prompts that fill the context and bounds that overflow it, with vLLM messages', () => {
    expect(fails({}, 100)).toBe(
      "This model's maximum context length is 100 tokens. However, your request has 100 input tokens. Please reduce the length of the input messages.",
    );
    expect(fails({ max_tokens: 71 }, 30)).toBe(
      "'max_tokens' or 'max_completion_tokens' is too large: 71. This model's maximum context length is 100 tokens and your request has 30 input tokens (71 > 100 - 30).",
    );
    expect(fails({ max_tokens: 0 }, 30)).toBe('max_tokens must be at least 1, got 0.');
    expect(fails({ max_completion_tokens: -3 }, 30)).toBe('max_tokens must be at least 1, got -3.');
    expect(fails({ min_tokens: 11, max_tokens: 10 }, 30)).toBe('min_tokens must be less than or equal to max_tokens=10, got 11.');
    expect(fails({ min_tokens: 10, max_tokens: 10 }, 30)).toBeUndefined();
  });
});

describe('Python text forms in messages', () => {
  it('writes floats, strings and values as Python repr does', async () => {
    const { pyFloat, pyRepr, pyStr } = await import('../../../src/service/chat/py-format');
    expect([2, -1, 0.5, 1e-7, 1.5e-7, 1e16, 123456.75, Infinity, -Infinity, NaN, -0].map(pyFloat)).toEqual([
      '2.0',
      '-1.0',
      '0.5',
      '1e-07',
      '1.5e-07',
      '1e+16',
      '123456.75',
      'inf',
      '-inf',
      'nan',
      '-0.0',
    ]);
    expect(pyStr("it's")).toBe('"it\'s"');
    expect(pyStr('a\nb\\')).toBe("'a\\nb\\\\'");
    expect(pyRepr({ a: [1, 'x', null, true, 2.5], b: 10n })).toBe("{'a': [1, 'x', None, True, 2.5], 'b': 10}");
  });
});
