// Filters where @huggingface/jinja differs from Python's Jinja2 (template-python.ts), rendered
// through Hearth's ChatTemplate: selectattr / rejectattr with tests on missing attributes (Jinja2
// hands the test an Undefined), dotted attributes and test arguments, and `| string` on dicts,
// lists, booleans and none as Python's str() writes them. The expected texts are what Jinja2 gives.
import { describe, expect, it } from 'vitest';
import { ChatTemplate } from '../../../src/engine/model/text/chat-template';

const render = (source: string, kwargs: Record<string, unknown>) => new ChatTemplate(source).render({ messages: [], kwargs });

describe('selectattr and rejectattr as Jinja2 runs them', () => {
  const messages = [
    { role: 'user', content: 'a' },
    { role: 'assistant', tool_calls: [{ function: { name: 'f' } }] },
    { role: 'assistant', content: 'b' },
    { role: 'tool', content: 'c', function: { name: 'f' } },
  ];
  const roles = (expr: string) => render(`{{ msgs | ${expr} | map(attribute="role") | join(",") }}`, { msgs: messages });

  it('a missing attribute is undefined to the test, not a reason to skip the item', () => {
    expect(roles('selectattr("tool_calls", "undefined")')).toBe('user,assistant,tool');
    expect(roles('rejectattr("tool_calls", "undefined")')).toBe('assistant');
    expect(roles('selectattr("tool_calls", "defined")')).toBe('assistant');
    expect(roles('rejectattr("content", "defined")')).toBe('assistant');
  });

  it('without a test the value is tested for truth; a test takes its arguments; dotted paths are followed', () => {
    expect(roles('selectattr("content")')).toBe('user,assistant,tool');
    expect(roles('selectattr("role", "equalto", "assistant")')).toBe('assistant,assistant');
    expect(roles('rejectattr("role", "equalto", "assistant")')).toBe('user,tool');
    expect(roles('selectattr("function.name", "equalto", "f")')).toBe('tool');
    expect(() => roles('selectattr("role", "no_such_test")')).toThrow(/Unknown test: no_such_test/);
  });
});

describe('the string filter as Python str()', () => {
  it("writes a dict's repr: single quotes, True/False/None, nested lists and dicts", () => {
    const tool = { type: 'function', function: { name: 'get_weather', strict: true, parameters: null, enum: ['a', 2, 2.5, false] } };
    expect(render('{{ tool | string }}', { tool })).toBe(
      "{'type': 'function', 'function': {'name': 'get_weather', 'strict': True, 'parameters': None, 'enum': ['a', 2, 2.5, False]}}",
    );
  });

  it('quotes and escapes strings as repr does', () => {
    const values = ["it's", 'say "hi"', 'both \' and "', 'tab\tnew\nline\\', 'nbsp\u00a0bell\u0007 zero\u200b é 日本 😀'];
    expect(render('{{ values | string }}', { values })).toBe(
      `["it's", 'say "hi"', 'both \\' and "', 'tab\\tnew\\nline\\\\', 'nbsp\\xa0bell\\x07 zero\\u200b é 日本 😀']`,
    );
  });

  it('booleans, none and undefined; strings and numbers unchanged', () => {
    expect(
      render('{{ true | string }}|{{ none | string }}|{{ nothing | string }}|{{ "x" | string }}|{{ 3 | string }}|{{ 2.0 | string }}', {}),
    ).toBe('True|None||x|3|2.0');
  });
});
