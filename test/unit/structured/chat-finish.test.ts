// The chat pipeline with the real output parsers and tiny-qwen3's real tokenizer and template
// (thinking and Hermes tools): engine events in, the response and the stream out. Checks the
// finish reason rule (parsed tool calls and a stopped choice: "tool_calls", whatever the tool
// choice; a choice cut by max_tokens keeps "length"), and that the streamed deltas of content,
// reasoning and tool calls fold into the non-streamed message.
import { beforeAll, describe, expect, it } from 'vitest';
import type { ServedModel } from '../../../src/engine/generate/types';
import { maxTokensFor } from '../../../src/service/chat/max-tokens';
import { planChat } from '../../../src/service/chat/plan';
import { buildPrompt } from '../../../src/service/chat/prompt';
import type { ChatRequest } from '../../../src/service/chat/request';
import type { ChatCompletionChunk } from '../../../src/service/chat/response-types';
import { collectResponse, streamResponse } from '../../../src/service/chat/run';
import { chatOutputOptions, chatOutputParser } from '../../../src/service/chat/tool-calls-output-parser';
import { eventsFor, handleOf, sampled, servedModel } from '../chat/fixtures';

let m: ServedModel;
beforeAll(async () => {
  m = await servedModel('tiny-qwen3');
});

const TOOLS = [
  { type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } },
];

function plan(req: ChatRequest) {
  const prompt = buildPrompt(req, m);
  const template = m.chatTemplates.forRequest({ hasTools: (req.tools?.length ?? 0) > 0 });
  const options = chatOutputOptions(req, {
    templateSource: template.source,
    promptText: prompt.text,
    turnEnd: m.tokenizer.specialTokens.eos_token ?? null,
  });
  return planChat({
    req,
    served: m,
    servedName: 'hearth/tiny-qwen3',
    prompt,
    maxTokens: maxTokensFor(req, prompt.tokenIds.length, m),
    adapter: null,
    parser: chatOutputParser(options),
    requestId: 'r',
    now: 0,
  });
}

const ids = (text: string) => m.tokenizer.encode(text, { addSpecialTokens: false });

/** The non-streamed choice and the stream folded as a client folds it. */
async function both(extra: Partial<ChatRequest>, text: string, finish: { reason: 'stop' | 'length'; eos: boolean }) {
  const req: ChatRequest = { messages: [{ role: 'user', content: 'Weather in Paris?' }], tools: TOOLS, ...extra };
  const tokens = sampled([...ids(text), ...(finish.eos ? [m.tokenizer.eosTokenId!] : [])]);
  const events = () => eventsFor([{ tokens, finish: finish.eos ? undefined : { reason: finish.reason } }]);
  const response = await collectResponse(plan(req), handleOf(events()));
  const chunks: ChatCompletionChunk[] = [];
  for await (const c of streamResponse(plan({ ...req, stream: true }), handleOf(events()))) chunks.push(c as ChatCompletionChunk);
  const folded = { content: '', reasoning: '', calls: [] as { name: string; arguments: string }[], finish: null as string | null };
  for (const c of chunks) {
    const ch = c.choices[0];
    if (!ch) continue;
    folded.content += ch.delta.content ?? '';
    folded.reasoning += ch.delta.reasoning_content ?? '';
    for (const t of ch.delta.tool_calls ?? []) {
      const call = (folded.calls[t.index] ??= { name: '', arguments: '' });
      call.name += t.function?.name ?? '';
      call.arguments += t.function?.arguments ?? '';
    }
    if (ch.finish_reason) folded.finish = ch.finish_reason;
  }
  return { choice: response.choices[0], folded };
}

const CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>';

describe('finish reasons and parsed output through the chat run', () => {
  it('"auto": a Hermes call then the end token finishes with tool_calls, streamed and not, after the reasoning', async () => {
    const { choice, folded } = await both({}, `Let me look.</think>${CALL}`, { reason: 'stop', eos: true });
    expect(choice.finish_reason).toBe('tool_calls');
    expect(choice.message.reasoning_content).toBe('Let me look.');
    expect(choice.message.tool_calls).toHaveLength(1);
    expect(choice.message.tool_calls[0].function).toEqual({ name: 'get_weather', arguments: '{"city": "Paris"}' });
    expect(folded.finish).toBe('tool_calls');
    expect(folded.reasoning).toBe('Let me look.');
    expect(folded.calls).toEqual([{ name: 'get_weather', arguments: '{"city": "Paris"}' }]);
  });

  it('a choice cut by max_tokens keeps "length" even when calls were already streamed', async () => {
    const { choice, folded } = await both({ chat_template_kwargs: { enable_thinking: false } }, `${CALL}\n<tool_call>\n{"name": "get_`, {
      reason: 'length',
      eos: false,
    });
    // Non-streamed, a broken call leaves the whole text as content (vLLM's Hermes parser).
    expect(choice.message.tool_calls).toEqual([]);
    expect(choice.finish_reason).toBe('length');
    // Streamed, the first call went out before the cut; the finish still says the output was cut.
    expect(folded.calls[0]).toEqual({ name: 'get_weather', arguments: '{"city": "Paris"}' });
    expect(folded.finish).toBe('length');
  });

  it('a named tool choice whose grammar completed (the engine ends it with "stop") finishes with tool_calls', async () => {
    const named = {
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
      chat_template_kwargs: { enable_thinking: false },
    } as Partial<ChatRequest>;
    const { choice, folded } = await both(named, '{"city": "Oslo"}', { reason: 'stop', eos: false });
    expect(choice.finish_reason).toBe('tool_calls');
    expect(choice.message.tool_calls[0].function).toEqual({ name: 'get_weather', arguments: '{"city": "Oslo"}' });
    expect(folded.finish).toBe('tool_calls');
    expect(folded.calls).toEqual([{ name: 'get_weather', arguments: '{"city": "Oslo"}' }]);
  });

  it("without tools nothing is parsed as a call and the finish reason is the engine's", async () => {
    const { choice } = await both({ tools: undefined, chat_template_kwargs: { enable_thinking: false } }, CALL, {
      reason: 'stop',
      eos: true,
    });
    expect(choice.message.tool_calls).toEqual([]);
    expect(choice.message.content).toBe(CALL);
    expect(choice.finish_reason).toBe('stop');
  });
});
