/**
 * Filters whose @huggingface/jinja (0.5.11, the newest release) behaviour differs from Python's
 * Jinja2 as transformers' apply_chat_template runs it, answered here before the library sees them
 * (template-budget.ts's interpreter calls pythonFilter for every filter):
 * - `selectattr(attr, test, ...)` / `rejectattr`: Jinja2 hands the test the attribute's value, an
 *   Undefined one when the item lacks it, so `selectattr("tool_calls", "undefined")` keeps the
 *   items without the key; the library skips such items for every test (it keeps none of them,
 *   and rejectattr keeps them all). Dotted attribute paths (`"function.name"`) are followed, and
 *   the test's arguments may be any expression, as in Jinja2.
 * - `x | string` on a dict, list, tuple, bool, None or undefined: Python's str() (a dict's repr,
 *   `{'type': 'function', ...}`, `True`, `None`, ''), which SmolLM3's template uses to list its
 *   tools; the library refuses a dict and writes lists, booleans and none as JSON.
 * Every other filter (and these on other operands) is the library's.
 *
 * Not here: the budget (template-budget.ts), template variables (chat-template.ts).
 * Reference: Jinja2 filters.py (do_selectattr, select_or_reject, make_attrgetter, do_string);
 * CPython Objects/unicodeobject.c unicode_repr (a string's repr).
 */
import { Environment, type Interpreter } from '@huggingface/jinja';

type Statement = Parameters<Interpreter['evaluate']>[0];
type RuntimeValue = ReturnType<Interpreter['evaluate']>;
/** A filter node as the library's parser builds it: a name, or a call of one with arguments. */
type FilterNode = { type: string; value?: string; callee?: { value?: string }; args?: Statement[] };
type Test = (operand: RuntimeValue, ...args: RuntimeValue[]) => boolean;

/** A JS value as one of the library's runtime values (its classes are not exported; an Environment converts). */
function runtimeValue(value: unknown): RuntimeValue {
  const env = new Environment();
  env.set('v', value);
  return env.lookupVariable('v');
}

const ArrayValue = runtimeValue([]).constructor as new (items: RuntimeValue[]) => RuntimeValue;
export const StringValue = runtimeValue('').constructor as new (text: string) => RuntimeValue;
const undefinedValue = (): RuntimeValue => runtimeValue(undefined);

export interface PythonFilterContext {
  evaluate(node: Statement, environment: Environment): RuntimeValue;
  /** Characters a string built here may have. */
  maxChars: number;
  /** Throws the budget's error. */
  tooLong(what: string): never;
}

/** A filter node's name: `x | name` or `x | name(...)`. */
export function filterName(filter: FilterNode): string | undefined {
  return filter.type === 'Identifier' ? filter.value : filter.type === 'CallExpression' ? filter.callee?.value : undefined;
}

/** The value of `filter` on `operand` where Jinja2 and the library differ, else null (the library's turn). */
export function pythonFilter(
  operand: RuntimeValue,
  filter: FilterNode,
  environment: Environment,
  ctx: PythonFilterContext,
): RuntimeValue | null {
  const name = filterName(filter);
  if (name === 'string' && filter.type === 'Identifier' && PY_STR_TYPES.has(operand.type)) return new StringValue(pyStr(operand, ctx));
  if ((name === 'selectattr' || name === 'rejectattr') && filter.type === 'CallExpression' && isSequence(operand)) {
    return selectAttr(operand, name === 'selectattr', filter.args ?? [], environment, ctx);
  }
  return null;
}

const PY_STR_TYPES = new Set([
  'ObjectValue',
  'KeywordArgumentsValue',
  'NamespaceValue',
  'ArrayValue',
  'TupleValue',
  'BooleanValue',
  'NullValue',
  'UndefinedValue',
]);

function isSequence(value: RuntimeValue): boolean {
  return value.type === 'ArrayValue' || value.type === 'TupleValue';
}

/** Jinja2's make_attrgetter: each dotted part looked up in turn, an integer part as an index; missing: Undefined. */
function attribute(item: RuntimeValue, path: string): RuntimeValue {
  let value = item;
  for (const part of path.split('.')) {
    if (value.value instanceof Map) value = value.value.get(part) ?? undefinedValue();
    else if (isSequence(value) && /^-?\d+$/.test(part)) value = (value.value as RuntimeValue[]).at(Number(part)) ?? undefinedValue();
    else return undefinedValue();
  }
  return value;
}

function selectAttr(
  operand: RuntimeValue,
  select: boolean,
  args: Statement[],
  environment: Environment,
  ctx: PythonFilterContext,
): RuntimeValue {
  const [attr, testName, ...testArgs] = args.map((a) => ctx.evaluate(a, environment));
  if (attr?.type !== 'StringValue') throw new Error(`${select ? 'selectattr' : 'rejectattr'} needs an attribute name`);
  let test: Test = (v) => v.__bool__().value;
  if (testName !== undefined) {
    const found = (environment as unknown as { tests: Map<string, Test> }).tests.get(String(testName.value));
    if (!found) throw new Error(`Unknown test: ${String(testName.value)}`);
    test = found;
  }
  const items = (operand.value as RuntimeValue[]).filter((item) => test(attribute(item, attr.value as string), ...testArgs) === select);
  return new ArrayValue(items);
}

/** Python's str(): a string as itself, everything else as its repr (None, True, an empty string for Undefined). */
function pyStr(value: RuntimeValue, ctx: PythonFilterContext): string {
  if (value.type === 'StringValue') return value.value as string;
  if (value.type === 'UndefinedValue') return '';
  const out = new ReprWriter(ctx);
  out.repr(value, 0);
  return out.text;
}

/** Nesting deeper than this is refused (Python's own recursion limit would stop near 1000). */
const MAX_DEPTH = 100;

class ReprWriter {
  text = '';

  constructor(private readonly ctx: PythonFilterContext) {}

  private add(s: string): void {
    this.text += s;
    if (this.text.length > this.ctx.maxChars)
      this.ctx.tooLong(`the template's string filter would build more than ${this.ctx.maxChars} characters`);
  }

  repr(value: RuntimeValue, depth: number): void {
    if (depth > MAX_DEPTH) throw new Error(`the string filter met a value nested more than ${MAX_DEPTH} deep`);
    switch (value.type) {
      case 'StringValue':
        return this.add(pyStringRepr(value.value as string));
      case 'BooleanValue':
        return this.add(value.value ? 'True' : 'False');
      case 'NullValue':
        return this.add('None');
      case 'UndefinedValue':
        return this.add('');
      case 'ArrayValue':
      case 'TupleValue': {
        const items = value.value as RuntimeValue[];
        const tuple = value.type === 'TupleValue';
        this.add(tuple ? '(' : '[');
        items.forEach((item, i) => {
          if (i > 0) this.add(', ');
          this.repr(item, depth + 1);
        });
        return this.add(tuple ? (items.length === 1 ? ',)' : ')') : ']');
      }
      case 'ObjectValue':
      case 'KeywordArgumentsValue':
      case 'NamespaceValue': {
        const namespace = value.type === 'NamespaceValue';
        this.add(namespace ? '<Namespace {' : '{');
        let first = true;
        for (const [k, v] of value.value as Map<string, RuntimeValue>) {
          if (!first) this.add(', ');
          first = false;
          this.add(pyStringRepr(k) + ': ');
          this.repr(v, depth + 1);
        }
        return this.add(namespace ? '}>' : '}');
      }
      case 'FunctionValue':
        return this.add('<function>');
      default:
        // Integers and floats: the library already prints them as Python does (1, 1.0).
        return this.add(value.toString());
    }
  }
}

/** Characters Python's str.isprintable() rejects (besides the space), which repr escapes. */
const NOT_PRINTABLE = /[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Zl}\p{Zp}\p{Zs}]/u;

/** Python's repr() of a str: single quotes unless it holds ' and no ", escapes as unicode_repr writes them. */
export function pyStringRepr(s: string): string {
  const quote = s.includes("'") && !s.includes('"') ? '"' : "'";
  let out = quote;
  for (const ch of s) {
    const code = ch.codePointAt(0)!;
    if (ch === quote || ch === '\\') out += '\\' + ch;
    else if (ch === '\n') out += '\\n';
    else if (ch === '\r') out += '\\r';
    else if (ch === '\t') out += '\\t';
    else if (ch !== ' ' && NOT_PRINTABLE.test(ch)) {
      if (code < 0x100) out += '\\x' + code.toString(16).padStart(2, '0');
      else if (code < 0x10000) out += '\\u' + code.toString(16).padStart(4, '0');
      else out += '\\U' + code.toString(16).padStart(8, '0');
    } else out += ch;
  }
  return out + quote;
}
