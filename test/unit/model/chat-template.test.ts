// Chat template renderings compared with exact expected strings. The expected texts are written
// from the documented formats: ChatML (<|im_start|>role\ncontent<|im_end|>\n), the Hermes tool
// format of Qwen2.5 / Qwen3 (tools as `json.dumps` lines in <tools>, calls as
// <tool_call>\n{"name": ..., "arguments": ...}\n</tool_call>, results as <tool_response> in a user
// turn), Qwen3's thinking rules, and transformers' continue_final_message and template variables.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  ChatTemplate,
  ChatTemplateError,
  ChatTemplates,
  selectTemplateSource,
  type ChatMessage,
} from '../../../src/engine/model/text/chat-template';

const models = new URL('../../../public/models/', import.meta.url);
const readJson = (path: string) => JSON.parse(readFileSync(new URL(path, models), 'utf8'));
const special = { eos_token: '<|im_end|>', pad_token: '<|endoftext|>' };
const tinyChat = new ChatTemplate(readJson('tiny-chat/tokenizer_config.json').chat_template, special);
const qwen2 = new ChatTemplate(readJson('tiny-qwen2/tokenizer_config.json').chat_template, special);
const qwen3 = new ChatTemplate(readFileSync(new URL('tiny-qwen3/chat_template.jinja', models), 'utf8'), special);

const weatherTool = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Get the weather',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};
const weatherJson =
  '{"type": "function", "function": {"name": "get_weather", "description": "Get the weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}';
const TOOLS_HEADER =
  '# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>\n' +
  weatherJson +
  '\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>';

/** A weather conversation: the call's arguments arrive as a JSON string, as in the OpenAI API. */
const toolConversation: ChatMessage[] = [
  { role: 'user', content: 'Weather in Paris?' },
  {
    role: 'assistant',
    content: null,
    tool_calls: [{ id: 'c1', type: 'function', function: { name: 'get_weather', arguments: '{"city": "Paris"}' } }],
  },
  { role: 'tool', tool_call_id: 'c1', content: '{"temp": 21}' },
];

describe('ChatML (hearth/tiny-chat)', () => {
  it('renders turns and the generation prompt, with no default system prompt', () => {
    const text = tinyChat.render({
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Hi' },
        { role: 'assistant', content: 'Hello!' },
        { role: 'user', content: '2+2?' },
      ],
      addGenerationPrompt: true,
    });
    expect(text).toBe(
      '<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello!<|im_end|>\n' +
        '<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n',
    );
    expect(tinyChat.render({ messages: [{ role: 'user', content: 'Hi' }] })).toBe('<|im_start|>user\nHi<|im_end|>\n');
  });

  it('tools in the system turn, calls and results in Hermes format', () => {
    const text = tinyChat.render({ messages: toolConversation, tools: [weatherTool], addGenerationPrompt: true });
    expect(text).toBe(
      `<|im_start|>system\n${TOOLS_HEADER}<|im_end|>\n<|im_start|>user\nWeather in Paris?<|im_end|>\n` +
        '<|im_start|>assistant\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call><|im_end|>\n' +
        '<|im_start|>user\n<tool_response>\n{"temp": 21}\n</tool_response><|im_end|>\n<|im_start|>assistant\n',
    );
  });

  it('documents in the system turn, after the system message', () => {
    const text = tinyChat.render({
      messages: [
        { role: 'system', content: 'Cite sources.' },
        { role: 'user', content: 'When?' },
      ],
      documents: [{ title: 'Moon', text: 'Apollo 11 landed in 1969.' }, { text: 'Untitled note.' }],
      addGenerationPrompt: true,
    });
    expect(text).toBe(
      '<|im_start|>system\nCite sources.\n\n# Documents\n\nAnswer from the documents below when they are relevant.\n' +
        '<document id="1">\nTitle: Moon\nApollo 11 landed in 1969.\n</document>\n<document id="2">\nUntitled note.\n</document><|im_end|>\n' +
        '<|im_start|>user\nWhen?<|im_end|>\n<|im_start|>assistant\n',
    );
  });

  it('content given as text parts is joined with newlines (vLLM)', () => {
    const text = tinyChat.render({
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'first' },
            { type: 'text', text: 'second' },
          ],
        },
      ],
    });
    expect(text).toBe('<|im_start|>user\nfirst\nsecond<|im_end|>\n');
    expect(() => tinyChat.render({ messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'x' } }] }] })).toThrow(
      /content\[0\] has type "image_url"; this model takes only text parts/,
    );
  });
});

describe('Qwen2.5 style (hearth/tiny-qwen2)', () => {
  it('adds the default Qwen system prompt when there is none', () => {
    expect(qwen2.render({ messages: [{ role: 'user', content: 'Hi' }], addGenerationPrompt: true })).toBe(
      '<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n',
    );
  });

  it('with tools: default prompt, tool list, call with parsed arguments, grouped results', () => {
    const messages: ChatMessage[] = [
      ...toolConversation.slice(0, 2),
      { role: 'tool', tool_call_id: 'c1', content: 'sunny' },
      { role: 'tool', tool_call_id: 'c2', content: 'windy' },
    ];
    messages[1] = { ...messages[1], content: 'Checking.' };
    const text = qwen2.render({ messages, tools: [weatherTool], addGenerationPrompt: true });
    expect(text).toBe(
      '<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.\n\n' +
        TOOLS_HEADER +
        '<|im_end|>\n' +
        '<|im_start|>user\nWeather in Paris?<|im_end|>\n' +
        '<|im_start|>assistant\nChecking.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call><|im_end|>\n' +
        '<|im_start|>user\n<tool_response>\nsunny\n</tool_response>\n<tool_response>\nwindy\n</tool_response><|im_end|>\n' +
        '<|im_start|>assistant\n',
    );
  });

  it('a given system message replaces the default, tools follow it', () => {
    const text = qwen2.render({
      messages: [
        { role: 'system', content: 'Be terse.' },
        { role: 'user', content: 'x' },
      ],
      tools: [weatherTool],
    });
    expect(text).toBe(`<|im_start|>system\nBe terse.\n\n${TOOLS_HEADER}<|im_end|>\n<|im_start|>user\nx<|im_end|>\n`);
  });

  it('arguments that are not JSON are refused before rendering', () => {
    const bad: ChatMessage[] = [{ role: 'assistant', content: '', tool_calls: [{ function: { name: 'f', arguments: '{oops' } }] }];
    expect(() => qwen2.render({ messages: bad })).toThrow('messages[0].tool_calls[0].function.arguments is not valid JSON');
  });
});

describe('Qwen3 style (hearth/tiny-qwen3)', () => {
  const user = { role: 'user', content: 'What is 2+2?' };

  it('enable_thinking false pre-fills an empty think block; true or absent does not', () => {
    expect(qwen3.render({ messages: [user], addGenerationPrompt: true, kwargs: { enable_thinking: false } })).toBe(
      '<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n',
    );
    const open = '<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n';
    expect(qwen3.render({ messages: [user], addGenerationPrompt: true, kwargs: { enable_thinking: true } })).toBe(open);
    expect(qwen3.render({ messages: [user], addGenerationPrompt: true })).toBe(open);
  });

  it('drops reasoning of turns before the last query, keeps it after', () => {
    const text = qwen3.render({
      messages: [
        { role: 'system', content: 'S' },
        { role: 'user', content: 'q1' },
        { role: 'assistant', content: '<think>\nold thoughts\n</think>\n\na1' },
        { role: 'user', content: 'q2' },
        { role: 'assistant', content: 'a2', reasoning_content: 'new thoughts' },
      ],
    });
    expect(text).toBe(
      '<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nq1<|im_end|>\n<|im_start|>assistant\na1<|im_end|>\n' +
        '<|im_start|>user\nq2<|im_end|>\n<|im_start|>assistant\n<think>\nnew thoughts\n</think>\n\na2<|im_end|>\n',
    );
  });

  it('tools: system text before the tool list; a tool result relayed as user is not a query', () => {
    const text = qwen3.render({
      messages: [
        { role: 'system', content: 'S' },
        ...toolConversation,
        { role: 'assistant', content: '<think>\nok\n</think>\n\nIt is 21.' },
      ],
      tools: [weatherTool],
    });
    expect(text).toBe(
      `<|im_start|>system\nS\n\n${TOOLS_HEADER}<|im_end|>\n<|im_start|>user\nWeather in Paris?<|im_end|>\n` +
        '<|im_start|>assistant\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call><|im_end|>\n' +
        '<|im_start|>user\n<tool_response>\n{"temp": 21}\n</tool_response><|im_end|>\n' +
        '<|im_start|>assistant\n<think>\nok\n</think>\n\nIt is 21.<|im_end|>\n',
    );
  });
});

describe('continue_final_message (transformers semantics)', () => {
  const messages: ChatMessage[] = [
    { role: 'user', content: 'Count' },
    { role: 'assistant', content: 'One, two,' },
  ];

  it('leaves the final message open: the text after its content is cut', () => {
    expect(tinyChat.render({ messages, continueFinalMessage: true })).toBe(
      '<|im_start|>user\nCount<|im_end|>\n<|im_start|>assistant\nOne, two,',
    );
    // Qwen3's template gives the final assistant turn an empty think block; continuation keeps it.
    expect(qwen3.render({ messages, continueFinalMessage: true })).toBe(
      '<|im_start|>user\nCount<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\nOne, two,',
    );
  });

  it('keeps trailing whitespace the template kept, and content given as parts', () => {
    const spaced = [messages[0], { role: 'assistant', content: 'One, two, ' }];
    expect(tinyChat.render({ messages: spaced, continueFinalMessage: true })).toMatch(/assistant\nOne, two, $/);
    const parts = [
      messages[0],
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'One,' },
          { type: 'text', text: 'two,' },
        ],
      },
    ];
    expect(tinyChat.render({ messages: parts, continueFinalMessage: true })).toMatch(/assistant\nOne,\ntwo,$/);
  });

  it('cannot be combined with add_generation_prompt, and needs the message in the rendering', () => {
    expect(() => tinyChat.render({ messages, continueFinalMessage: true, addGenerationPrompt: true })).toThrow(
      'Cannot set both `continue_final_message` and `add_generation_prompt` to True.',
    );
    const dropsContent = new ChatTemplate('{% for m in messages %}{{ m.role }}\n{% endfor %}');
    expect(() => dropsContent.render({ messages, continueFinalMessage: true })).toThrow(/final message does not appear/);
  });
});

describe('template variables and errors', () => {
  it('special tokens, extra kwargs and strftime_now reach the template', () => {
    const t = new ChatTemplate(
      "{{ bos_token }}{% for m in messages %}{{ m.content }}{{ eos_token }}{% endfor %}|{{ reasoning_effort }}|{{ strftime_now('%Y') }}",
      {
        bos_token: '<s>',
        eos_token: '</s>',
      },
    );
    const year = String(new Date().getFullYear());
    expect(
      t.render({
        messages: [
          { role: 'user', content: 'a' },
          { role: 'assistant', content: 'b' },
        ],
        kwargs: { reasoning_effort: 'low' },
      }),
    ).toBe(`<s>a</s>b</s>|low|${year}`);
  });

  it('raise_exception becomes a ChatTemplateError with the template message', () => {
    const t = new ChatTemplate(
      "{% if messages[0].role != 'user' %}{{ raise_exception('Conversations must start with a user message') }}{% endif %}ok",
    );
    expect(t.render({ messages: [{ role: 'user', content: 'x' }] })).toBe('ok');
    expect(() => t.render({ messages: [{ role: 'assistant', content: 'x' }] })).toThrow(ChatTemplateError);
    expect(() => t.render({ messages: [{ role: 'assistant', content: 'x' }] })).toThrow(/Conversations must start with a user message/);
  });

  it('a template that does not compile is a ChatTemplateError', () => {
    expect(() => new ChatTemplate('{% for m in messages %}')).toThrow(/chat template does not compile/);
  });
});

describe('choosing the template', () => {
  it('chat_template.jinja wins over tokenizer_config.json', () => {
    expect(selectTemplateSource('from file', 'from config', false)).toBe('from file');
    expect(selectTemplateSource(null, 'from config', false)).toBe('from config');
    expect(selectTemplateSource(null, null, false)).toBeNull();
  });

  it('named templates: tool_use when tools are passed, default otherwise', () => {
    const list = [
      { name: 'default', template: 'D' },
      { name: 'tool_use', template: 'T' },
    ];
    expect(selectTemplateSource(null, list, false)).toBe('D');
    expect(selectTemplateSource(null, list, true)).toBe('T');
    expect(() => selectTemplateSource(null, [{ name: 'rag', template: 'R' }], false)).toThrow(/no "default"/);
  });

  it('a per-request template overrides the model one; a model without a template says so', () => {
    const templates = new ChatTemplates(null, '{% for m in messages %}[{{ m.content }}]{% endfor %}', special);
    expect(templates.forRequest().render({ messages: [{ role: 'user', content: 'a' }] })).toBe('[a]');
    expect(templates.forRequest({ override: '{{ messages | length }}' }).render({ messages: [{ role: 'user', content: 'a' }] })).toBe('1');
    const none = new ChatTemplates(null, null, special);
    expect(none.available).toBe(false);
    expect(() => none.forRequest()).toThrow(/this model has no chat template/);
  });
});
