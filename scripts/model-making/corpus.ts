/**
 * The tokenizer training corpus, generated from a seed (no downloads): English prose from
 * templates over corpus-words.ts, chat turns, multi-digit arithmetic (the trainer's demo task),
 * tool definitions and calls as JSON in the Hermes format the chat templates use, reasoning text,
 * code, markdown and some non-ASCII text. Special tokens never appear in it: they are added tokens,
 * matched before pre-tokenization, so BPE must not learn them.
 * Not here: the BPE algorithm (bpe-trainer.ts).
 */
import { Prng } from './prng';
import * as W from './corpus-words';

const NOUNS = W.words(W.NOUNS);
const ADJS = W.words(W.ADJECTIVES);
const VERBS = W.words(W.VERBS);
const PAST = W.words(W.PAST_VERBS);
const ADVS = W.words(W.ADVERBS);
const FUNC = W.words(W.FUNCTION_WORDS);
const NAMES = W.words(W.NAMES);
const PLACES = W.words(W.PLACES);
const UNI = W.words(W.UNICODE_WORDS);
const TECH = W.words(W.TECH_WORDS);

const cap = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

/** Sentence shapes; each returns one sentence. */
const SENTENCES: Array<(r: Prng) => string> = [
  (r) => `${r.pick(NAMES)} ${r.pick(PAST)} the ${r.pick(ADJS)} ${r.pick(NOUNS)} in ${r.pick(PLACES)}.`,
  (r) => `The ${r.pick(NOUNS)} of the ${r.pick(NOUNS)} is ${r.pick(ADVS)} ${r.pick(ADJS)}.`,
  (r) => `Why did ${r.pick(NAMES)} ${r.pick(VERBS)} the ${r.pick(NOUNS)}?`,
  (r) => `We ${r.pick(ADVS)} ${r.pick(VERBS)} a ${r.pick(ADJS)} ${r.pick(NOUNS)} when the ${r.pick(NOUNS)} ${r.pick(PAST)}.`,
  (r) => `${cap(r.pick(ADJS))} ${r.pick(NOUNS)}s can ${r.pick(VERBS)} ${r.pick(FUNC)} ${r.pick(FUNC)} ${r.pick(NOUNS)}.`,
  (r) => `If you ${r.pick(VERBS)} the ${r.pick(NOUNS)}, it will ${r.pick(VERBS)} ${r.pick(ADVS)}.`,
  (r) =>
    `${r.pick(NAMES)} and ${r.pick(NAMES)} ${r.pick(PAST)} to ${r.pick(PLACES)} last ${r.pick(['week', 'month', 'year', 'summer', 'winter'])}.`,
  (r) => `"${cap(r.pick(FUNC))} ${r.pick(FUNC)} ${r.pick(NOUNS)}," ${r.pick(['said', 'asked', 'replied'])} ${r.pick(NAMES)}.`,
  (r) => `There are ${r.range(2, 999)} ${r.pick(NOUNS)}s in the ${r.pick(ADJS)} ${r.pick(NOUNS)}.`,
  (r) => `It's ${r.pick(ADJS)}, isn't it? I'd say they're ${r.pick(ADJS)} and we've ${r.pick(PAST)} it.`,
  (r) =>
    Array.from({ length: r.range(5, 14) }, () => r.pick(FUNC))
      .join(' ')
      .replace(/^./, (c) => c.toUpperCase()) + '.',
  (r) =>
    `In ${r.range(1900, 2030)}, ${r.pick(NAMES)} ${r.pick(PAST)} ${r.range(2, 99)} ${r.pick(NOUNS)}s for $${r.range(1, 999)}.${r.range(10, 99)}.`,
];

function paragraph(r: Prng): string {
  return Array.from({ length: r.range(2, 7) }, () => r.pick(SENTENCES)(r)).join(' ');
}

function arithmetic(r: Prng): string {
  const digits = () => r.range(1, 9999);
  const a = digits();
  const b = digits();
  const op = r.pick(['+', '-', '*']);
  const value = op === '+' ? a + b : op === '-' ? a - b : a * b;
  return r.pick([
    `What is ${a} ${op} ${b}?\n${a} ${op} ${b} = ${value}`,
    `${a} ${op} ${b} = ${value}`,
    `Compute ${a} ${op} ${b}. The answer is ${value}.`,
    `Q: ${a} ${op} ${b}\nA: ${value}`,
  ]);
}

const TOOLS = [
  { name: 'get_weather', description: 'Get the current weather in a city', params: { city: 'string', unit: 'string' } },
  { name: 'search_web', description: 'Search the web for a query', params: { query: 'string', max_results: 'integer' } },
  { name: 'calculate', description: 'Evaluate an arithmetic expression', params: { expression: 'string' } },
  { name: 'send_email', description: 'Send an email to a person', params: { to: 'string', subject: 'string', body: 'string' } },
  { name: 'get_time', description: 'Get the current time in a time zone', params: { timezone: 'string' } },
  {
    name: 'convert_currency',
    description: 'Convert an amount between currencies',
    params: { amount: 'number', from: 'string', to: 'string' },
  },
];

function toolSchema(r: Prng): string {
  const t = r.pick(TOOLS);
  const properties = Object.fromEntries(
    Object.entries(t.params).map(([k, type]) => [k, { type, description: `The ${k.replace('_', ' ')}` }]),
  );
  const fn = {
    name: t.name,
    description: t.description,
    parameters: { type: 'object', properties, required: Object.keys(t.params).slice(0, 1) },
  };
  return JSON.stringify({ type: 'function', function: fn }).replace(/,"/g, ', "').replace(/":/g, '": ');
}

function toolCall(r: Prng): string {
  const t = r.pick(TOOLS);
  const args = Object.fromEntries(
    Object.entries(t.params).map(([k, type]) => [k, type === 'string' ? r.pick([...PLACES, ...NOUNS]) : r.range(1, 500)]),
  );
  const call = JSON.stringify({ name: t.name, arguments: args }).replace(/,"/g, ', "').replace(/":/g, '": ');
  return r.pick([`\n${call}\n`, `${call}`, `Calling ${t.name} with ${JSON.stringify(args)}.`]);
}

function toolPreamble(): string {
  return (
    '# Tools\n\nYou may call one or more functions to assist with the user query.\n\n' +
    'You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n'
  );
}

function chatTurns(r: Prng): string {
  const q = r.pick([
    `What is the capital of ${r.pick(PLACES)}?`,
    `Can you help me ${r.pick(VERBS)} a ${r.pick(NOUNS)}?`,
    `How do I ${r.pick(VERBS)} the ${r.pick(ADJS)} ${r.pick(NOUNS)}?`,
    `Tell me about ${r.pick(NOUNS)}s.`,
    `Write a short story about a ${r.pick(ADJS)} ${r.pick(NOUNS)}.`,
  ]);
  const system = r.pick(['You are a helpful assistant.', 'You are Hearth, a helpful assistant.', 'Answer briefly.']);
  const greeting = r.pick(['Hello! ', 'Hi! ', 'Hey, ', 'Good morning. ', 'Thanks! ', 'Thank you. ', '']);
  return `system\n${system}\nuser\n${greeting}${q}\nassistant\n${r.pick(['Sure! ', 'Of course. ', 'Certainly. ', 'Hello! ', ''])}${paragraph(r)}\n`;
}

function reasoning(r: Prng): string {
  return (
    `Let me think about this step by step. First, I need to ${r.pick(VERBS)} the ${r.pick(NOUNS)}. ` +
    `Then I should ${r.pick(VERBS)} it. Wait, maybe the ${r.pick(NOUNS)} is ${r.pick(ADJS)}. ` +
    `So the answer is ${r.range(0, 9999)}.\n\n`
  );
}

function code(r: Prng): string {
  const name = `${r.pick(VERBS)}_${r.pick(NOUNS)}`;
  const arg = r.pick(NOUNS);
  return r.pick([
    `def ${name}(${arg}, count=${r.range(0, 9)}):\n    """${cap(r.pick(VERBS))} the ${arg}."""\n    result = []\n    for i in range(count):\n        result.append(${arg}[i])\n    return result\n`,
    `function ${name.replace('_', '')}(${arg}) {\n  const ${r.pick(NOUNS)} = ${arg}.map((x) => x * ${r.range(2, 9)});\n  if (${arg}.length === 0) {\n    return null;\n  }\n  return ${arg};\n}\n`,
    `const config = {\n  "${r.pick(TECH)}": ${r.pick(['true', 'false', 'null', String(r.range(0, 99))])},\n  "${r.pick(TECH)}": "${r.pick(NOUNS)}"\n};\n`,
    `${r.pick(TECH)} ${r.pick(TECH)} ${r.pick(TECH)}(${r.pick(TECH)}, ${r.pick(TECH)}) { ${r.pick(TECH)} ${r.pick(TECH)}; }\n`,
  ]);
}

function markdown(r: Prng): string {
  const items = Array.from({ length: r.range(2, 5) }, () => `${r.pick(['-', '*', '1.'])} ${cap(r.pick(ADJS))} ${r.pick(NOUNS)}`);
  return `## ${cap(r.pick(NOUNS))} and ${r.pick(NOUNS)}\n\n${items.join('\n')}\n\n**${cap(r.pick(ADJS))}** \`${r.pick(TECH)}\` ${paragraph(r)}\n`;
}

function unicode(r: Prng): string {
  return `${r.pick(NAMES)} ordered ${r.pick(UNI)} and ${r.pick(UNI)} in ${r.pick(UNI)}: ${r.pick(UNI)} ${r.pick(UNI)}.`;
}

/** Documents of the corpus, in a fixed order for a given seed. */
export function generateCorpus(seed: number, documents: number): string[] {
  const r = new Prng(seed);
  const kinds: Array<[number, (r: Prng) => string]> = [
    [30, paragraph],
    [14, chatTurns],
    [14, arithmetic],
    [6, toolSchema],
    [6, toolCall],
    [1, toolPreamble],
    [6, reasoning],
    [8, code],
    [6, markdown],
    [5, unicode],
  ];
  const total = kinds.reduce((s, [w]) => s + w, 0);
  const out: string[] = [];
  for (let i = 0; i < documents; i++) {
    let x = r.int(total);
    for (const [w, make] of kinds) {
      if (x < w) {
        out.push(make(r));
        break;
      }
      x -= w;
    }
  }
  return out;
}
