// The chat-template budget (issue 10): hostile templates end with TemplateBudgetError (or a
// ChatTemplateError flagged overBudget) instead of running for hours or exhausting memory, while
// the bundled models' real templates render exactly as @huggingface/jinja's own Template.render
// renders them, and a repository whose template is over budget is refused when it is loaded,
// naming the file.
import { readFileSync } from 'node:fs';
import { Template } from '@huggingface/jinja';
import { describe, expect, it } from 'vitest';
import { ChatTemplate, ChatTemplateError, ChatTemplates } from '../../../src/engine/model/text/chat-template';
import { renderWithBudget, TEMPLATE_BUDGET, TemplateBudgetError } from '../../../src/engine/model/text/template-budget';

const models = new URL('../../../public/models/', import.meta.url);
const qwen3Source = readFileSync(new URL('tiny-qwen3/chat_template.jinja', models), 'utf8');
const conversation = (n: number) => Array.from({ length: n }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: `message ${i}` }));
const render = (source: string, vars: Record<string, unknown> = {}, budget = TEMPLATE_BUDGET) =>
  renderWithBudget(new Template(source), vars, budget);

describe('renderWithBudget', () => {
  it('renders a real template exactly as the library does', () => {
    const vars = { messages: conversation(40), add_generation_prompt: true, tools: null, eos_token: '<|im_end|>' };
    expect(renderWithBudget(new Template(qwen3Source), vars)).toBe(new Template(qwen3Source).render(vars));
  });

  it('stops nested loops with empty bodies by counting each iteration', () => {
    const nested = '{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}';
    expect(() => render(nested, {}, { ...TEMPLATE_BUDGET, maxSteps: 20_000, maxMillis: 60_000 })).toThrow(/more than 20000 steps/);
  });

  it('refuses a huge range() before building it', () => {
    expect(() => render('{{ range(1000000000) | length }}')).toThrow(TemplateBudgetError);
    expect(() => render('{{ range(5, 1000000000, 3) | length }}')).toThrow(/range\(\) of 333333332 numbers/);
    expect(render('{{ range(3) | join(",") }}|{{ range(10, 0, -3) | join(",") }}')).toBe('0,1,2|10,7,4,1');
  });

  it('refuses strings and lists that grow past their caps', () => {
    const doubling = '{% set ns = namespace(s="ab") %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s | length }}';
    expect(() => render(doubling)).toThrow(/string of more than/);
    const lists = '{% set ns = namespace(l=[1]) %}{% for i in range(40) %}{% set ns.l = ns.l + ns.l %}{% endfor %}{{ ns.l | length }}';
    expect(() => render(lists)).toThrow(/\+ would build a list of more than 100000 items/);
  });

  it('refuses a filter whose result would be oversized before it builds it', () => {
    // Each would build a string past V8's maximum length (a RangeError, not a budget error, if built).
    expect(() => render("{{ 'a\\nb' | indent(600000000, true) }}")).toThrow(/indent would build a string of more than/);
    const text = { messages: [{ role: 'user', content: 'x'.repeat(30_000) }] };
    const wide = '{% set ns = namespace(s="y") %}{% for i in range(15) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}';
    expect(() => render(`${wide}{{ messages[0].content | replace('', ns.s) }}`, text)).toThrow(/replace would build/);
    // The same through the string method, before the library builds it.
    expect(() => render(`${wide}{{ messages[0].content.replace('', ns.s) }}`, text)).toThrow(/replace would build/);
    expect(() => render(`${wide}{{ messages[0].content.replace('x', ns.s, count=-1) }}`, text)).toThrow(/replace would build/);
    // A list holding itself twice, 40 levels deep: its repr (the string filter, template-python.ts) is capped while it is written.
    const nested = '{% set ns = namespace(l=["ab"]) %}{% for i in range(40) %}{% set ns.l = [ns.l, ns.l] %}{% endfor %}';
    expect(() => render(`${nested}{{ ns.l | string }}`)).toThrow(/string filter would build more than/);
    const many = `${wide}{% set ns.l = [] %}{% for i in range(200) %}{% set ns.l = ns.l + [ns.s ~ ns.s ~ ns.s ~ ns.s] %}{% endfor %}`;
    expect(() => render(`${many}{{ ns.l | join(messages[0].content) }}`, text)).toThrow(/join would build/);
    // Within the cap they render as the library does.
    expect(
      render("{{ 'a\\nb' | indent(2, true) }}|{{ 'abc' | replace('b', 'xy') }}|{{ ['a', 'b'] | join('-') }}|{{ 'ab' | join(',') }}"),
    ).toBe('  a\n  b|axyc|a-b|a,b');
    const methods = "{{ 'abcb'.replace('b', 'xy') }}|{{ 'abcb'.replace('b', 'x', 1) }}|{{ 'abcb'.replace('b', 'x', count=1) }}";
    expect(render(methods)).toBe(new Template(methods).render({}));
    expect(render(methods)).toBe('axycxy|axcb|axcb');
  });

  it('sizes a value printed over shared references before building it, by every way a value becomes text', () => {
    // 8 x 8 x 8 references to one range(100000): 51 M numbers in one step (issue 26).
    const shared =
      '{% set r = range(100000) %}{% set a = [r, r, r, r, r, r, r, r] %}{% set b = [a, a, a, a, a, a, a, a] %}{% set d = [b, b, b, b, b, b, b, b] %}';
    // "would build": refused from the operands, not after building (that message says "built").
    for (const [use, what] of [
      ['{{ d | tojson }}', 'tojson'],
      ['{{ d | tojson(indent=2) }}', 'tojson'],
      ['{{ d }}', 'printed'],
      ["{{ d ~ '' }}", '~'],
      ["{{ 'x' + d }}", '\\+'],
      ['{{ d | join }}', 'join'],
      ["{{ d | join(', ') }}", 'join'],
    ]) {
      expect(() => render(shared + use), use).toThrow(new RegExp(`the template's ${what} would build a string of more than`));
    }
    // Indentation and separators count: a small list with a huge indent or separator is refused too.
    expect(() => render('{{ [[1], [2]] | tojson(indent=10000000) }}')).toThrow(/tojson would build/);
    const comma = '{% set ns = namespace(s=",") %}{% for i in range(20) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}';
    expect(() => render(`${comma}{{ range(10) | tojson(separators=(ns.s, ':')) }}`)).toThrow(/tojson would build/);
    // Printing accumulates: the fifth print of a 1 M string passes the cap, and is refused before it is added.
    const wide = '{% set ns = namespace(s="y") %}{% for i in range(20) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}';
    expect(() => render(`${wide}${'{{ ns.s }}'.repeat(5)}`)).toThrow(/printed would build/);
  });

  it('splits a string only into as many parts as a list may hold, counted before splitting', () => {
    const wide = '{% set ns = namespace(s="y ") %}{% for i in range(18) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}';
    expect(() => render(`${wide}{{ ns.s.split('y') | length }}`)).toThrow(/split would build a list of more than 100000 items/);
    expect(() => render(`${wide}{{ ns.s.split() | length }}`)).toThrow(/split would build a list of more than 100000 items/);
    expect(render(`${wide}{{ ns.s.split('y', 2) | length }}`)).toBe('3');
    const methods = "{{ 'a b  c'.split() }}{{ 'a,b,,c'.split(',') }}{{ 'a,b,c'.split(',', 1) }}";
    expect(render(methods)).toBe(new Template(methods).render({}));
  });

  it('prints values within the caps exactly as the library does', () => {
    const vars = {
      tools: [{ type: 'function', function: { name: 'add', description: 'Adds "a" and \\b.\n', parameters: { a: 1.5, b: [true, null] } } }],
      messages: conversation(3),
    };
    const source =
      '{{ tools | tojson }}|{{ tools | tojson(indent=2) }}|{{ tools | tojson(separators=(",", ":")) }}|{{ messages }}|' +
      "{{ range(3) ~ 'x' }}|{{ 'n' + 1 }}|{{ [1, 2] + [3] }}|{{ messages | map(attribute='content') | join(', ') }}|{{ 2.0 }}{{ none }}";
    expect(render(source, vars)).toBe(new Template(source).render(vars));
  });

  it('does not count the text the request brought against the string cap', () => {
    const long = 'x'.repeat(TEMPLATE_BUDGET.maxStringChars + 10);
    expect(render('{{ messages[0].content }}!', { messages: [{ role: 'user', content: long }] })).toHaveLength(long.length + 1);
  });

  it('stops on the clock when one step does a lot of work', () => {
    const budget = { ...TEMPLATE_BUDGET, maxMillis: 0, maxSteps: Number.MAX_SAFE_INTEGER };
    expect(() => render('{% for i in range(5000) %}{{ i }}{% endfor %}', {}, budget)).toThrow(/longer than 0 ms/);
    // The clock is read at every step: a render of a few dozen steps stops too (issue 26: read every
    // 1024 steps, a render whose steps each did much work overran by seconds).
    expect(() => render('{% for i in range(10) %}{{ i }}{% endfor %}', {}, budget)).toThrow(/longer than 0 ms/);
  });

  it('keeps the globals transformers gives templates', () => {
    expect(render('{{ true }}{{ none is none }}{{ strftime_now("%Y") }}')).toBe(`truetrue${new Date().getFullYear()}`);
    expect(() => render('{{ raise_exception("no system role") }}')).toThrow('no system role');
  });
});

describe('ChatTemplate and ChatTemplates under the budget', () => {
  it('a request template over budget is a ChatTemplateError flagged overBudget', () => {
    const t = new ChatTemplate('{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}');
    try {
      t.render({ messages: [{ role: 'user', content: 'hi' }] });
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(ChatTemplateError);
      expect((e as ChatTemplateError).overBudget).toBe(true);
      expect((e as Error).message).toMatch(/exceeds its budget/);
    }
  });

  it('refuses a request template with a long whitespace run before compiling it, and compiles one within the limit', () => {
    expect(() => new ChatTemplate(' '.repeat(250_000))).toThrow(
      expect.objectContaining({
        overBudget: true,
        message: expect.stringMatching(/run of 250000 whitespace characters at position 0, over the limit of 512/),
      }),
    );
    expect(new ChatTemplate(`a${'\u3000'.repeat(512)}b`).render({ messages: [] })).toBe(`a${'\u3000'.repeat(512)}b`);
  });

  it('a template error that is not the budget stays an ordinary ChatTemplateError', () => {
    const t = new ChatTemplate("{{ raise_exception('roles must alternate') }}");
    expect(() => t.render({ messages: [] })).toThrow(expect.objectContaining({ overBudget: false }));
  });

  it('refuses a repository template over budget at load, naming the file and field', () => {
    const loop = '{% for i in range(100000) %}{% for m in messages %}{% endfor %}{% endfor %}';
    expect(() => new ChatTemplates(loop, null, {})).toThrow(/^chat_template\.jinja: .*budget/);
    expect(() => new ChatTemplates(null, loop, {})).toThrow(/^tokenizer_config\.json: "chat_template": .*budget/);
    expect(() => new ChatTemplates(null, 'x'.repeat(300 * 1024), {})).toThrow(/over the limit of 262144/);
    // A long whitespace run is refused before the library's compile, whose cost is quadratic in it (issue 26).
    expect(() => new ChatTemplates(`{{ 'a' }}\n${' \t'.repeat(300)}x`, null, {})).toThrow(
      /^chat_template\.jinja: chat template has a run of 601 whitespace characters at position 9, over the limit of 512/,
    );
    // A template that raises on the sample conversation is the conversation's problem, not the file's.
    expect(new ChatTemplates(null, "{{ raise_exception('no') }}", {}).available).toBe(true);
  });
});
