// Hearth's numeric range grammars, matched by xgrammar itself (its grammar engine, no tokenizer):
// integers exactly the ones in range; numbers only values in range (as a JSON parser reads them),
// and every canonical decimal of up to 15 significant digits inside the range.
import { beforeAll, describe, expect, it } from 'vitest';
import { integerRangeEbnf, numberRangeEbnf, type NumericBounds } from '../../../src/service/structured/numeric-ranges';
import { XGrammarRuntime, type XGrammarLib } from '../../../src/service/structured/xgrammar-runtime';
import { rng } from './decode-helpers';

let lib: XGrammarLib;
beforeAll(async () => {
  lib = (await XGrammarRuntime.load()).lib;
});

async function matcherOf(ebnf: string): Promise<(text: string) => Promise<boolean>> {
  const grammar = await lib.Grammar.fromEBNF(`root ::= ${ebnf}`);
  return (text) => lib.Testings.isGrammarAcceptString(grammar, text);
}

function inside(x: number, b: NumericBounds): boolean {
  return (
    (b.minimum === undefined || x >= b.minimum) &&
    (b.maximum === undefined || x <= b.maximum) &&
    (b.exclusiveMinimum === undefined || x > b.exclusiveMinimum) &&
    (b.exclusiveMaximum === undefined || x < b.exclusiveMaximum)
  );
}

const integerCases: NumericBounds[] = [
  { minimum: 0 },
  { minimum: -3 },
  { maximum: 17 },
  { maximum: -12 },
  { minimum: -5, maximum: 20 },
  { minimum: 7, maximum: 7 },
  { exclusiveMinimum: 0, exclusiveMaximum: 10 },
  { exclusiveMinimum: -101, maximum: 99 },
  { minimum: 2.5, maximum: 40.2 },
  { minimum: -250, maximum: -199 },
  { minimum: 95, maximum: 1005 },
];

describe('integer ranges', () => {
  it.each(integerCases)('%j: exactly the integers inside, from -1200 to 1200', async (bounds) => {
    const accepts = await matcherOf(integerRangeEbnf(bounds)!);
    for (let n = -1200; n <= 1200; n++) expect(await accepts(String(n)), String(n)).toBe(inside(n, bounds));
    for (const bad of ['', '-', '-0', '01', '1.0', '1e2', '+1', ' 1']) expect(await accepts(bad), bad).toBe(false);
  });

  it('large bounds', async () => {
    const bounds = { minimum: -9007199254740991, maximum: 12345678901234 };
    const accepts = await matcherOf(integerRangeEbnf(bounds)!);
    for (const [text, ok] of [
      ['12345678901234', true],
      ['12345678901235', false],
      ['99999999999999', false],
      ['-9007199254740991', true],
      ['-9007199254740992', false],
      ['0', true],
      ['4503599627370496', false],
    ] as const) {
      expect(await accepts(text), text).toBe(ok);
    }
  });

  it('bounds that leave no integer give no grammar', () => {
    expect(integerRangeEbnf({ minimum: 5, maximum: 4 })).toBeNull();
    expect(integerRangeEbnf({ minimum: 0.2, maximum: 0.7 })).toBeNull();
    expect(integerRangeEbnf({ exclusiveMinimum: 3, exclusiveMaximum: 4 })).toBeNull();
  });
});

const numberCases: NumericBounds[] = [
  { minimum: 0 },
  { exclusiveMinimum: 0 },
  { maximum: 3.75 },
  { minimum: -2.5 },
  { minimum: -1, maximum: 1 },
  { minimum: 0.5, maximum: 2.5 },
  { exclusiveMinimum: 0, exclusiveMaximum: 1 },
  { minimum: 0.2, maximum: 0.75 },
  { exclusiveMinimum: 0.125, exclusiveMaximum: 0.13 },
  { exclusiveMinimum: -0.5, exclusiveMaximum: 0.5 },
  { minimum: -10.05, exclusiveMaximum: -3 },
  { minimum: 10.5 },
  { exclusiveMaximum: -0.001 },
  { minimum: 99.99, maximum: 100.01 },
];

/** Canonical decimals (no exponent, no trailing fraction zeros) on a grid around the bounds. */
function candidates(bounds: NumericBounds, seed: number): string[] {
  const random = rng(seed);
  const anchors = Object.values(bounds).filter((v): v is number => typeof v === 'number');
  const out = new Set<string>(['0', '-0.5', '0.5', '1', '-1']);
  for (const a of anchors) {
    for (const delta of [0, 1e-3, -1e-3, 1e-2, -1e-2, 0.1, -0.1, 0.5, -0.5, 1, -1, 2, -2]) out.add(String(Number((a + delta).toFixed(6))));
  }
  for (let i = 0; i < 250; i++) {
    const center = anchors.length ? anchors[Math.floor(random() * anchors.length)] : 0;
    const x = center + (random() - 0.5) * 6;
    out.add(String(Number(x.toFixed(Math.floor(random() * 5)))));
  }
  return [...out].filter((t) => !t.includes('e'));
}

describe('number ranges', () => {
  it.each(numberCases)('%j: sound, and complete on canonical decimals', async (bounds) => {
    const accepts = await matcherOf(numberRangeEbnf(bounds)!);
    for (const text of candidates(bounds, 7)) {
      const ok = await accepts(text);
      const x = JSON.parse(text) as number;
      // Sound: nothing outside. Complete: everything inside (these have few digits).
      expect(ok, `${text} in ${JSON.stringify(bounds)}`).toBe(inside(x, bounds));
    }
    for (const bad of ['', '-', '.5', '1.', '01.5', '1e0', '--1']) expect(await accepts(bad), bad).toBe(false);
  });

  it('fractions long enough to round onto an exclusive bound are not generated', async () => {
    const accepts = await matcherOf(numberRangeEbnf({ exclusiveMinimum: 0, exclusiveMaximum: 1 })!);
    // 0.99999999999999999 reads as 1.0 in a JSON parser.
    expect(JSON.parse('0.99999999999999999')).toBe(1);
    expect(await accepts('0.99999999999999999')).toBe(false);
    expect(await accepts('0.99999999999999')).toBe(true);
  });

  it('bounds with no generable number give no grammar', () => {
    expect(numberRangeEbnf({ minimum: 3, maximum: 2 })).toBeNull();
    expect(numberRangeEbnf({ exclusiveMinimum: 1, exclusiveMaximum: 1 })).toBeNull();
  });
});
