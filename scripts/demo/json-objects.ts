/**
 * The JSON stage of the demo training (scripts/train-demo-json.ts), which makes hearth/tiny-json:
 * requests for a small made-up object ("Describe a person as JSON.") answered with compact JSON,
 * as Hearth's JSON grammars write it (`{"a": 1, "b": ["x", "y"]}`: `", "` and `": "`, nothing else).
 *
 * Why a model for structured outputs needs it: a JSON schema's grammar fixes the keys and the
 * punctuation, but what goes inside a free string, and where it ends, is the model's choice.
 * tiny-chat knows only one-digit sums and puts almost no probability on a closing quote, so at
 * temperature 1 a person's name runs on until the token limit (issue 13). Here it learns the
 * shape of such objects: short strings that close, small arrays that close, plausible integers,
 * the keys in varied order and subsets so it follows whatever keys the grammar forces rather than
 * one fixed object.
 */
import { mulberry32 } from '../../src/engine/tensor/random';

const FIRST = [
  'Ada',
  'Alan',
  'Grace',
  'Linus',
  'Marie',
  'Nikola',
  'Emmy',
  'Carl',
  'Rosa',
  'Yuki',
  'Omar',
  'Lena',
  'Ravi',
  'Sofia',
  'Tom',
  'Anna',
  'Leo',
  'Mia',
  'Noah',
  'Iris',
  'Hugo',
  'Zoe',
  'Ivan',
  'Nora',
  'Kofi',
  'Eva',
  'Sam',
  'Lucy',
  'Max',
  'Jade',
  'Ben',
  'Clara',
  'Dan',
  'Elif',
  'Finn',
  'Hana',
];
const LAST = [
  'Lovelace',
  'Turing',
  'Hopper',
  'Curie',
  'Tesla',
  'Noether',
  'Parks',
  'Tanaka',
  'Haddad',
  'Berg',
  'Patel',
  'Rossi',
  'Smith',
  'Novak',
  'Silva',
  'Kim',
  'Moreau',
  'Jensen',
  'Okafor',
  'Weber',
  'Costa',
  'Lee',
];
const TAGS = [
  'math',
  'music',
  'chess',
  'poetry',
  'travel',
  'cooking',
  'running',
  'science',
  'art',
  'code',
  'books',
  'film',
  'hiking',
  'jazz',
  'tennis',
  'design',
  'history',
  'gardening',
  'photography',
  'teaching',
];
const CITIES = ['Paris', 'Tokyo', 'Lagos', 'Lima', 'Oslo', 'Cairo', 'Berlin', 'Seoul', 'Rome', 'Austin', 'Delhi', 'Quito'];
const COUNTRIES = ['France', 'Japan', 'Nigeria', 'Peru', 'Norway', 'Egypt', 'Germany', 'Korea', 'Italy', 'India', 'Chile'];
const JOBS = ['teacher', 'nurse', 'engineer', 'chef', 'pilot', 'writer', 'farmer', 'doctor', 'artist', 'baker'];
const TITLES = ['The Long Road', 'Blue River', 'Small Stars', 'The Last Garden', 'Night Train', 'Silent Hills', 'Red Moon', 'Paper Birds'];
const GENRES = ['fiction', 'drama', 'mystery', 'comedy', 'history', 'fantasy', 'poetry', 'science'];
const SPECIES = ['cat', 'dog', 'rabbit', 'parrot', 'horse', 'turtle', 'hamster'];
const PET_NAMES = ['Milo', 'Luna', 'Bella', 'Coco', 'Rex', 'Kiwi', 'Olive', 'Pip'];

type Value = string | number | string[];
type Field = [key: string, value: (rand: () => number) => Value];

const pick = <T>(rand: () => number, xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)];
const between = (rand: () => number, low: number, high: number) => low + Math.floor(rand() * (high - low + 1));
const some = (rand: () => number, xs: readonly string[], max: number) => {
  const out = new Set<string>();
  const n = between(rand, 1, max);
  while (out.size < n) out.add(pick(rand, xs));
  return [...out];
};
const personName = (rand: () => number) => (rand() < 0.8 ? `${pick(rand, FIRST)} ${pick(rand, LAST)}` : pick(rand, FIRST));

interface Kind {
  prompts: readonly string[];
  /** The fields every object of this kind has, in the usual order. */
  core: readonly Field[];
  /** Fields added to some objects. */
  extra: readonly Field[];
}

const KINDS: readonly Kind[] = [
  {
    prompts: [
      'Describe a person as JSON.',
      'Describe a person in JSON.',
      'Give me a person as JSON.',
      'Make up a person. Reply with JSON.',
      'Return a JSON object describing a person.',
      'Invent a character as a JSON object.',
      'Create a user profile as JSON.',
    ],
    core: [
      ['name', personName],
      ['age', (r) => between(r, 18, 90)],
      ['tags', (r) => some(r, TAGS, 3)],
    ],
    extra: [
      ['city', (r) => pick(r, CITIES)],
      ['job', (r) => pick(r, JOBS)],
      ['email', (r) => `${pick(r, FIRST).toLowerCase()}@example.com`],
      ['hobbies', (r) => some(r, TAGS, 2)],
    ],
  },
  {
    prompts: ['Describe a book as JSON.', 'Give me a book in JSON.', 'Invent a book. Reply with JSON.'],
    core: [
      ['title', (r) => pick(r, TITLES)],
      ['author', personName],
      ['year', (r) => between(r, 1800, 2025)],
      ['genres', (r) => some(r, GENRES, 2)],
    ],
    extra: [['pages', (r) => between(r, 80, 900)]],
  },
  {
    prompts: ['Describe a city as JSON.', 'Give me a city in JSON.'],
    core: [
      ['name', (r) => pick(r, CITIES)],
      ['country', (r) => pick(r, COUNTRIES)],
      ['population', (r) => between(r, 10, 9000) * 1000],
    ],
    extra: [['tags', (r) => some(r, TAGS, 2)]],
  },
  {
    prompts: ['Describe a pet as JSON.', 'Make up a pet. Reply with JSON.'],
    core: [
      ['name', (r) => pick(r, PET_NAMES)],
      ['species', (r) => pick(r, SPECIES)],
      ['age', (r) => between(r, 1, 15)],
    ],
    extra: [['tags', (r) => some(r, ['calm', 'playful', 'shy', 'loud', 'lazy', 'curious'], 2)]],
  },
];

/** Hearth's compact JSON: one space after each `:` and `,`, as its JSON grammars allow by default. */
export function compactJson(value: unknown): string {
  return JSON.stringify(value).replace(/("(?:[^"\\]|\\.)*")|([:,])/g, (_, str, sep) => str ?? `${sep} `);
}

export interface JsonRequest {
  prompt: string;
  reply: string;
}

const LIST_PROMPTS: readonly (readonly [string, number])[] = [
  ['List some people as JSON.', 0],
  ['Give me a JSON array of people.', 0],
  ['List a few books as JSON.', 1],
  ['List some pets in JSON.', 3],
];

/** One object of a kind: its usual keys in order, or (when `varied`) some dropped, added and shuffled. */
function object(rand: () => number, kind: Kind, varied: boolean): Record<string, Value> {
  let fields = [...kind.core];
  if (varied) {
    fields = fields.filter(() => rand() < 0.7);
    for (const f of kind.extra) if (rand() < 0.4) fields.push(f);
    if (fields.length === 0) fields = [kind.core[0]];
    for (let i = fields.length - 1; i > 0; i--) {
      const j = Math.floor(rand() * (i + 1));
      [fields[i], fields[j]] = [fields[j], fields[i]];
    }
  }
  return Object.fromEntries(fields.map(([key, value]) => [key, value(rand)]));
}

/**
 * `count` requests with their replies, deterministic in `seed`. A share `plain` of them is a person
 * with the usual keys in the usual order (the common case); `lists` are arrays of one to three
 * objects, mostly one (so an array of objects, like tool_choice "required"'s array of calls,
 * closes rather than running on); the rest are other kinds, or persons with varied keys.
 */
export function jsonRequests(count: number, seed: number, plain = 0.25, lists = 0.15): JsonRequest[] {
  const rand = mulberry32(seed);
  return Array.from({ length: count }, () => {
    const u = rand();
    if (u < plain) return { prompt: pick(rand, KINDS[0].prompts), reply: compactJson(object(rand, KINDS[0], false)) };
    if (u < plain + lists) {
      const [prompt, k] = pick(rand, LIST_PROMPTS);
      const n = rand() < 0.5 ? 1 : rand() < 0.7 ? 2 : 3;
      return { prompt, reply: compactJson(Array.from({ length: n }, () => object(rand, KINDS[k], false))) };
    }
    const kind = rand() < 1 / 3 ? KINDS[0] : pick(rand, KINDS.slice(1));
    return { prompt: pick(rand, kind.prompts), reply: compactJson(object(rand, kind, rand() < 0.6)) };
  });
}

/** The demo's tool: the one the structured-output e2e tests offer. */
export const ADD_TOOL = {
  type: 'function',
  function: {
    name: 'add',
    description: 'Adds two integers.',
    parameters: { type: 'object', properties: { a: { type: 'integer' }, b: { type: 'integer' } }, required: ['a', 'b'] },
  },
} as const;

/**
 * A sum asked with the add tool offered, answered with one call in the JSON array that
 * tool_choice "required" makes the model write (vLLM's `[{"name", "parameters"}]`). Without it
 * the model, having learned that JSON arrays go on, wrote call after call to the token limit.
 */
export function addToolCall(a: number, b: number): string {
  return compactJson([{ name: 'add', parameters: { a, b } }]);
}
