/**
 * The budget a chat template renders under: a template is a program from an untrusted source (a
 * request's `chat_template`, a downloaded repository's chat_template.jinja or tokenizer_config.json)
 * and it runs on the one engine thread every principal shares, so its loops, its `range()` and
 * the values it builds are bounded here (issue 10, item 1).
 *
 * Why a bounded interpreter and not a worker that is terminated on overrun: every chat request
 * renders a template, so the budget sits on the hot path. A worker would cost a structured clone
 * of the conversation and a round trip per request, and a fresh worker (with @huggingface/jinja
 * loaded again) after every overrun; counting steps in the library's own interpreter costs one
 * comparison per AST node and gives the same guarantee in-thread:
 * - steps: every node @huggingface/jinja evaluates counts one step (TEMPLATE_BUDGET.maxSteps), so
 *   nested loops end however they are written;
 * - time: the wall clock is read at every step (TEMPLATE_BUDGET.maxMillis; a read costs tens of
 *   nanoseconds), and the work of one step is bounded by the caps below (a sort or a membership
 *   test walks at most maxListItems items, a string operation at most maxStringChars characters),
 *   so the render stops within a few tens of milliseconds of its budget (issue 26: checked every
 *   1024 steps, a render overran by seconds);
 * - memory: `range()` refuses to build more than TEMPLATE_BUDGET.maxRangeItems numbers before
 *   building any (the library's range builds its whole array up front), and every string or list
 *   an operation creates is checked against a cap (values that are only looked up, such as a long
 *   message, are not counted: the request already holds them). What can build a large value in
 *   one step has its size checked from its operands before it is built (issue 26): the filters
 *   `tojson`, `join`, `indent`, `replace` and the string method `s.replace(a, b)`, the operators
 *   `~` and `+`, and printing a value (`{{ d }}`). Sizes of lists and dicts are bounded with
 *   template-value-size.ts, which counts a list referenced many times (`[r, r, r]`) at its full
 *   printed size without walking it more than once.
 *
 * Not here: what the template means (chat-template.ts), filters answered as Python's Jinja2 does
 * (template-python.ts, whose strings are capped by the same limit).
 * Reference: https://github.com/huggingface/huggingface.js/tree/main/packages/jinja (the
 * interpreter extended here); transformers' `apply_chat_template` globals.
 */
import { Environment, Interpreter, type Template } from '@huggingface/jinja';
import { filterName, pythonFilter, StringValue, type PythonFilterContext } from './template-python';
import { filterResultChars, splitParts, ValueSizes } from './template-value-size';

/** The limits of one render; README.md "Budgets for untrusted files and programs" lists them. */
export const TEMPLATE_BUDGET = {
  /** AST nodes evaluated in one render (a 100-message conversation takes under 10,000). */
  maxSteps: 500_000,
  /** Wall-clock time of one render. */
  maxMillis: 1_000,
  /** Numbers one `range()` call may produce. */
  maxRangeItems: 100_000,
  /** Items of one list an operation creates (as many as range() gives: sorting them takes tens of ms). */
  maxListItems: 100_000,
  /**
   * Characters of one string an operation creates (the prompt included), beyond the text the
   * request brought: one string operation over this many takes well under 50 ms.
   */
  maxStringChars: 2 ** 20,
};

export type TemplateBudget = typeof TEMPLATE_BUDGET;

/** The template ran past its budget: the render stops and nothing is generated. */
export class TemplateBudgetError extends Error {
  override name = 'TemplateBudgetError';
}

type Statement = Parameters<Interpreter['evaluate']>[0];
type RuntimeValue = ReturnType<Interpreter['evaluate']>;

/** Node types whose value is an existing one (a variable, an item), not something built now. */
const LOOKUPS = new Set(['Identifier', 'MemberExpression', 'StringLiteral', 'IntegerLiteral', 'FloatLiteral', 'HearthValue']);

/** An operand already evaluated (and sized), handed back to the library's operator code. */
type ValueNode = { type: 'HearthValue'; value: RuntimeValue };
const valueNode = (value: RuntimeValue) => ({ type: 'HearthValue', value }) as ValueNode as unknown as Statement;

/** A binary expression node as the library's parser builds it. */
type BinaryNode = { type: string; operator: { value: string }; left: Statement; right: Statement };

/**
 * A private method of the library's Interpreter (private in the typings only), to be wrapped on
 * this instance. A library version without it must fail loudly here (and in the unit tests), not
 * run unbounded.
 */
function libraryMethod<F>(interpreter: Interpreter, name: string): F {
  const method = (interpreter as unknown as Record<string, unknown>)[name];
  if (typeof method !== 'function') throw new Error(`@huggingface/jinja has no Interpreter.${name}: update template-budget.ts`);
  return (method as (...args: unknown[]) => unknown).bind(interpreter) as F;
}

class BudgetedInterpreter extends Interpreter {
  private steps = 0;
  private readonly deadline: number;

  constructor(
    env: Environment,
    private readonly budget: TemplateBudget,
    /** Characters a created string may have: the cap plus the text the request brought. */
    private readonly maxChars: number,
  ) {
    super(env);
    this.deadline = performance.now() + budget.maxMillis;
    this.boundBlocks();
    this.boundOperators();
    this.boundFilterGrowth();
  }

  /**
   * A block (a loop body, an if branch, a macro body, the whole template) prints each of its
   * statements' values after the other. The library's evaluateBlock (private in the typings,
   * hence the instance property) is answered here with the same loop, which sizes each value
   * before printing it and counts one step per block: an empty `{% for %}{% endfor %}` over a long
   * range has no node of its own that would.
   */
  private boundBlocks(): void {
    libraryMethod(this, 'evaluateBlock');
    (this as unknown as { evaluateBlock: (statements: Statement[], environment: Environment) => RuntimeValue }).evaluateBlock = (
      statements,
      environment,
    ) => {
      this.step();
      let result = '';
      for (const statement of statements) {
        const value = this.evaluate(statement, environment);
        if (value.type === 'NullValue' || value.type === 'UndefinedValue') continue;
        this.checkChars('printed', result.length + new ValueSizes().printed(value));
        result += value.toString();
      }
      return new StringValue(result);
    };
  }

  /**
   * `a ~ b` and `a + b` (with a string, or two lists) build their result in one step: both
   * operands are evaluated here, sized, and handed to the library's evaluateBinaryExpression as
   * values, so its semantics (errors on undefined, number arithmetic) stay its own.
   */
  private boundOperators(): void {
    const evaluateBinary = libraryMethod<(node: BinaryNode, environment: Environment) => RuntimeValue>(this, 'evaluateBinaryExpression');
    (this as unknown as { evaluateBinaryExpression: typeof evaluateBinary }).evaluateBinaryExpression = (node, environment) => {
      const op = node.operator?.value;
      if (op !== '~' && op !== '+') return evaluateBinary(node, environment);
      const left = this.evaluate(node.left, environment);
      const right = this.evaluate(node.right, environment);
      const list = (v: RuntimeValue) => v.type === 'ArrayValue' || v.type === 'TupleValue';
      if (op === '+' && list(left) && list(right)) {
        const items = (left.value as unknown[]).length + (right.value as unknown[]).length;
        if (items > this.budget.maxListItems)
          throw new TemplateBudgetError(`the template's + would build a list of more than ${this.budget.maxListItems} items`);
      } else if (op === '~' || left.type === 'StringValue' || right.type === 'StringValue') {
        const sizes = new ValueSizes();
        this.checkChars(op, sizes.printed(left) + sizes.printed(right));
      }
      return evaluateBinary({ ...node, left: valueNode(left), right: valueNode(right) }, environment);
    };
  }

  /**
   * Checks what `indent`, `replace` and `join` would build before they build it: the library's
   * applyFilter evaluates a filter's arguments (evaluateArguments) and then does the work in the
   * same step, so the check sits between the two. Private in the typings, like evaluateBlock.
   */
  private boundFilterGrowth(): void {
    type Args = [RuntimeValue[], Map<string, RuntimeValue>];
    const self = this as unknown as {
      applyFilter: (operand: RuntimeValue, filter: FilterNode, environment: Environment) => RuntimeValue;
      evaluateArguments: (args: Statement[], environment: Environment) => Args;
    };
    if (typeof self.applyFilter !== 'function' || typeof self.evaluateArguments !== 'function')
      throw new Error('@huggingface/jinja has no Interpreter.applyFilter/evaluateArguments: update template-budget.ts');
    const applyFilter = self.applyFilter.bind(this);
    const evaluateArguments = self.evaluateArguments.bind(this);
    let pending: { name: string; operand: RuntimeValue } | undefined;
    const python: PythonFilterContext = {
      evaluate: (node, environment) => this.evaluate(node, environment),
      maxChars: this.maxChars,
      tooLong: (what) => {
        throw new TemplateBudgetError(what);
      },
    };
    self.applyFilter = (operand, filter, environment) => {
      // Filters where the library and Python's Jinja2 differ (template-python.ts); its result is sized by evaluate().
      const own = pythonFilter(operand, filter, environment, python);
      if (own) return own;
      const name = filterName(filter) ?? '';
      // A filter without arguments never reaches evaluateArguments: check it here.
      if (filter.type === 'Identifier') this.checkGrowth(name, operand, [], new Map());
      else pending = { name, operand };
      try {
        return applyFilter(operand, filter, environment);
      } finally {
        pending = undefined;
      }
    };
    self.evaluateArguments = (args, environment) => {
      // Only the filter's own arguments: a filter inside them sets its own.
      const mine = pending;
      pending = undefined;
      const out = evaluateArguments(args, environment);
      if (mine) this.checkGrowth(mine.name, mine.operand, out[0], out[1]);
      return out;
    };
  }

  private checkGrowth(name: string, operand: RuntimeValue, args: RuntimeValue[], kwargs: Map<string, RuntimeValue>): void {
    const chars = filterResultChars(name, operand, args, kwargs);
    if (chars !== null) this.checkChars(name, chars);
  }

  override evaluate(statement: Statement, environment: Environment): RuntimeValue {
    if ((statement as { type?: string } | undefined)?.type === 'HearthValue') return (statement as unknown as ValueNode).value;
    this.step();
    const value = this.boundedStringMethod(statement, environment) ?? super.evaluate(statement, environment);
    if (statement && !LOOKUPS.has(statement.type)) this.checkSize(value);
    return value;
  }

  /**
   * `s.replace(a, b)` and `s.split(sep)` on a string: the library's methods build their result in
   * one call, so the member is answered here with the same function behind a size check (the
   * string is evaluated once, as the library would). Null for every other node, which the library
   * evaluates.
   */
  private boundedStringMethod(statement: Statement, environment: Environment): RuntimeValue | null {
    const member = statement as unknown as MemberNode;
    const name = member?.property?.value;
    if (member?.type !== 'MemberExpression' || member.computed || (name !== 'replace' && name !== 'split')) return null;
    const object = this.evaluate(member.object as Statement, environment);
    if (object.type !== 'StringValue') return super.evaluate(statement, environment);
    const method = (object as unknown as { builtins: Map<string, RuntimeValue> }).builtins.get(name) as FunctionLike;
    const Function = method.constructor as new (fn: FunctionLike['value']) => RuntimeValue;
    return new Function((args, scope) => {
      const last = args.at(-1);
      const kwargs = last?.type === 'KeywordArgumentsValue' ? (last.value as Map<string, RuntimeValue>) : new Map<string, RuntimeValue>();
      if (name === 'replace') this.checkGrowth('replace', object, kwargs.size > 0 ? args.slice(0, -1) : args, kwargs);
      else if (splitParts(object.value as string, args, this.budget.maxListItems) > this.budget.maxListItems) {
        throw new TemplateBudgetError(`the template's split would build a list of more than ${this.budget.maxListItems} items`);
      }
      return method.value(args, scope);
    });
  }

  private step(): void {
    if (++this.steps > this.budget.maxSteps) {
      throw new TemplateBudgetError(`the template evaluated more than ${this.budget.maxSteps} steps`);
    }
    if (performance.now() > this.deadline) {
      throw new TemplateBudgetError(`the template ran longer than ${this.budget.maxMillis} ms`);
    }
  }

  /** Refuses a string of `chars` characters (an upper bound) before `what` builds it. */
  private checkChars(what: string, chars: number): void {
    if (chars > this.maxChars)
      throw new TemplateBudgetError(`the template's ${what} would build a string of more than ${this.maxChars} characters`);
  }

  private checkSize(value: RuntimeValue): void {
    if (value.type === 'StringValue' && (value.value as string).length > this.maxChars) {
      throw new TemplateBudgetError(`the template built a string of more than ${this.maxChars} characters`);
    }
    if ((value.type === 'ArrayValue' || value.type === 'TupleValue') && (value.value as unknown[]).length > this.budget.maxListItems) {
      throw new TemplateBudgetError(`the template built a list of more than ${this.budget.maxListItems} items`);
    }
  }
}

/** A member access node as @huggingface/jinja's parser builds it (`object.property`). */
type MemberNode = { type: string; computed?: boolean; object?: unknown; property?: { value?: unknown } };

/** A built-in method as the library holds it: a FunctionValue whose value is called with the arguments. */
type FunctionLike = RuntimeValue & { value: (args: RuntimeValue[], scope: Environment) => RuntimeValue };

/** A filter node as @huggingface/jinja's parser builds it: a name, or a call of one. */
type FilterNode = { type: string; value?: string; callee?: { value?: string } };

/** Python's range(), refusing (before building anything) more than `max` numbers. */
function cappedRange(max: number) {
  return (start: number, stop?: number, step = 1): number[] => {
    if (stop === undefined) [start, stop] = [0, start];
    if (![start, stop, step].every(Number.isFinite)) throw new Error('range() arguments must be finite numbers');
    if (step === 0) throw new Error('range() step must not be zero');
    const count = Math.max(0, Math.ceil((stop - start) / step));
    if (count > max) throw new TemplateBudgetError(`range() of ${count} numbers is over the limit of ${max}`);
    return Array.from({ length: count }, (_, i) => start + i * step);
  };
}

/** transformers' `strftime_now`: the current local time formatted with Python's strftime codes (C locale names). */
function strftimeNow(format: string): string {
  const d = new Date();
  const pad = (n: number, w = 2) => String(n).padStart(w, '0');
  const name = (opts: Intl.DateTimeFormatOptions) => new Intl.DateTimeFormat('en-US', opts).format(d);
  const codes: Record<string, () => string> = {
    Y: () => String(d.getFullYear()),
    y: () => pad(d.getFullYear() % 100),
    m: () => pad(d.getMonth() + 1),
    d: () => pad(d.getDate()),
    b: () => name({ month: 'short' }),
    B: () => name({ month: 'long' }),
    a: () => name({ weekday: 'short' }),
    A: () => name({ weekday: 'long' }),
    H: () => pad(d.getHours()),
    M: () => pad(d.getMinutes()),
    S: () => pad(d.getSeconds()),
    '%': () => '%',
  };
  return format.replace(/%(.)/g, (token, code: string) => codes[code]?.() ?? token);
}

/** Characters of every string in `value` (the text a request brings into the template). */
export function textChars(value: unknown, depth = 0): number {
  if (typeof value === 'string') return value.length;
  if (value === null || typeof value !== 'object' || depth > 64) return 0;
  let n = 0;
  for (const v of Array.isArray(value) ? value : Object.values(value)) n += textChars(v, depth + 1);
  return n;
}

/**
 * Renders a compiled template with `vars` under `budget`: @huggingface/jinja's own Template.render
 * (the same globals: booleans, none, raise_exception, range, strftime_now) with the counting
 * interpreter. Throws TemplateBudgetError when the budget runs out, the library's errors otherwise.
 */
export function renderWithBudget(template: Template, vars: Record<string, unknown>, budget: TemplateBudget = TEMPLATE_BUDGET): string {
  const env = new Environment();
  const globals: Record<string, unknown> = {
    false: false,
    true: true,
    none: null,
    False: false,
    True: true,
    None: null,
    raise_exception: (message: unknown) => {
      throw new Error(String(message));
    },
    range: cappedRange(budget.maxRangeItems),
    strftime_now: strftimeNow,
  };
  for (const [k, v] of Object.entries({ ...globals, ...vars })) env.set(k, v);
  const interpreter = new BudgetedInterpreter(env, budget, budget.maxStringChars + textChars(vars));
  return interpreter.run(template.parsed).value as string;
}
