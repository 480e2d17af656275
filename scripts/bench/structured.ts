/**
 * The structured-outputs section of `npm run bench`: what a JSON-schema constraint costs per
 * generated token, against unconstrained decoding of the same model, prompt and batch.
 *   - decode step time (ms per token) through the real Engine, unconstrained and constrained, and
 *     their difference: the per-token overhead a client sees. It includes the host work (xgrammar
 *     fills the allowed-token bitmask before each step and accepts the sampled token after it),
 *     the bitmask upload, and the step pipelining a constrained sequence gives up (its next mask
 *     depends on the token just sampled, so the engine does not submit step N+1 before reading N),
 *     which a third run isolates with a constraint that allows everything (no mask, no pipelining);
 *   - the host time the matchers take inside those constrained steps (a timing wrapper around
 *     each matcher), which unlike wall-clock differences holds up on a loaded machine;
 *   - the matcher alone, on the CPU: microseconds per token to fill the bitmask and accept a token,
 *     walking the grammar with seeded random allowed tokens (no GPU);
 *   - compile time of the schema for the model's vocabulary (cold), and a cache hit;
 *   - jump-forward decoding (src/engine/generate/jump-forward.ts) on a schema with long fixed
 *     keys: tokens per second and model steps per output token, with and without it, on the same
 *     seeds (so the same tokens: each position's noise is that of its output index).
 * The constrained runs sample (seeded) under the grammar until max_tokens; a run the grammar ends
 * early still gives its step times. The random-shape models borrow the bundled tokenizer (4096
 * tokens), so the matcher figures are those of a small vocabulary: xgrammar's mask work grows with
 * the tokenizer (SmolLM2: 49k, Qwen: 152k), which the bench cannot load offline.
 *
 * Node only (run.ts skips it with --chromium). Not here: the generation figures (generation.ts), the
 * tables these figures print as (structured-table.ts).
 */
import type { GpuContext } from '../../src/engine/gpu/device';
import { Engine } from '../../src/engine/generate/engine';
import type { GenerationHandle, GenerationRequest, TokenConstraint } from '../../src/engine/generate/types';
import type { ServedModel } from '../../src/engine/generate/types';
import { choiceConstraints, prepareStructuredOutput } from '../../src/service/structured/structured-output';
import { benchModel } from './bench-models';

export interface StructuredBenchOptions {
  models: string[];
  /** Decode steps per measurement (default 32; quick 12). */
  decodeSteps?: number;
  batches?: number[];
  /** Keep only the first N layers of the random shapes (quick on software adapters: 4). */
  layers?: number;
  quick?: boolean;
}

export interface ConstraintDecodeFigures {
  batch: number;
  freeStepMs: number;
  /** With a constraint that allows every token: what giving up step pipelining alone costs. */
  unpipelinedStepMs: number;
  constrainedStepMs: number;
  /** Host time in the matchers' calls per constrained step (all B rows), measured inside the engine. */
  matcherMsPerStep: number;
  /** constrained - free, per generated token of one sequence. */
  overheadMsPerToken: number;
  /** Tokens the constrained run produced per sequence (the grammar may end it before max_tokens). */
  constrainedTokens: number;
}

export interface StructuredBenchResult {
  model: string;
  layers: number;
  totalLayers: number;
  vocabSize: number;
  tokenizerVocab: number;
  compileMs: number;
  cacheHitMs: number;
  /** CPU: fillNextTokenBitmask + acceptToken per token, µs. */
  matcherUsPerToken: number;
  decode: ConstraintDecodeFigures[];
  jumpForward: JumpForwardFigures;
}

export interface JumpForwardFigures {
  /** Output tokens per run (the same with and without: the same seeds). */
  tokens: number;
  /** Decode steps per output token (prefill's first token excluded from neither). */
  stepsPerTokenOn: number;
  stepsPerTokenOff: number;
  tokensPerSecondOn: number;
  tokensPerSecondOff: number;
}

/** A schema whose keys are long and fixed (each key and its `": ` are forced): jump-forward's case. */
export const FIXED_KEYS_SCHEMA = {
  type: 'object',
  properties: {
    customer_account_identifier: { type: 'integer', minimum: 0, maximum: 99 },
    preferred_delivery_weekday: { enum: ['monday', 'wednesday', 'friday'] },
    requires_signature_on_delivery: { type: 'boolean' },
    number_of_parcels_in_shipment: { type: 'integer', minimum: 1, maximum: 9 },
  },
  required: [
    'customer_account_identifier',
    'preferred_delivery_weekday',
    'requires_signature_on_delivery',
    'number_of_parcels_in_shipment',
  ],
  additionalProperties: false,
};

/** A typical tool-argument / extraction schema: nested objects, arrays, enums, numbers and strings. */
export const BENCH_SCHEMA = {
  type: 'object',
  properties: {
    name: { type: 'string' },
    kind: { enum: ['person', 'place', 'thing'] },
    score: { type: 'number', minimum: 0, maximum: 1 },
    tags: { type: 'array', items: { type: 'string' } },
    address: { type: 'object', properties: { city: { type: 'string' }, zip: { type: 'integer' } }, required: ['city'] },
    notes: { type: 'string' },
  },
  required: ['name', 'kind', 'score', 'tags', 'address', 'notes'],
};

const REQUEST = { response_format: { type: 'json_schema', json_schema: { name: 'bench', schema: BENCH_SCHEMA } } } as const;

/**
 * A constraint that allows every token and never ends: the engine treats its sequence as
 * constrained (no step pipelining) but applies no mask, which separates the two costs.
 */
class AllowAll implements TokenConstraint {
  fillNextTokenBitmask(): boolean {
    return false;
  }
  acceptToken(): boolean {
    return true;
  }
  isTerminated(): boolean {
    return false;
  }
  dispose(): void {}
}

/** Wraps a matcher and adds the host time of its calls (as the engine makes them) to `spent.ms`. */
class Timed implements TokenConstraint {
  constructor(
    private readonly inner: TokenConstraint,
    private readonly spent: { ms: number; calls: number },
  ) {}
  private time<T>(f: () => T): T {
    const t0 = performance.now();
    try {
      return f();
    } finally {
      this.spent.ms += performance.now() - t0;
    }
  }
  fillNextTokenBitmask(bitmask: Int32Array): boolean {
    this.spent.calls++;
    return this.time(() => this.inner.fillNextTokenBitmask(bitmask));
  }
  acceptToken(tokenId: number): boolean {
    return this.time(() => this.inner.acceptToken(tokenId));
  }
  isTerminated(): boolean {
    return this.time(() => this.inner.isTerminated());
  }
  dispose(): void {
    this.inner.dispose();
  }
}

let salt = 0;

function request(model: string, prompt: number[], maxTokens: number, seed: number, constraint: TokenConstraint | null): GenerationRequest {
  return {
    model,
    adapter: null,
    promptTokenIds: prompt,
    n: 1,
    // Sampled, so a constrained run wanders through strings instead of closing the document at once.
    sampling: [{ temperature: 1, seed, ignoreEos: constraint === null }],
    maxTokens,
    promptLogprobs: null,
    badWords: [],
    constraints: [constraint],
    cacheSalt: `bench-structured-${++salt}`,
  };
}

async function tokenTimes(handle: GenerationHandle): Promise<number[]> {
  const times: number[] = [];
  for await (const ev of handle) if (ev.type === 'tokens') for (const _ of ev.tokens) times.push(performance.now());
  return times;
}

function prompt(n: number, V: number, seed: number): number[] {
  return Array.from({ length: n }, (_, i) => 1 + ((i * 7919 + seed * 104729) % (V - 1)));
}

function structuredModel(served: ServedModel) {
  return { tokenizer: served.tokenizer, vocabSize: served.config.vocabSize, eosTokenIds: served.eosTokenIds };
}

/** Mean ms per step over B concurrent sequences, from the moment all have a first token. */
function stepMs(times: number[][]): { ms: number; tokens: number } {
  const from = Math.max(...times.map((t) => t[0]));
  const to = Math.max(...times.map((t) => t[t.length - 1]));
  const after = times.map((t) => t.filter((x) => x > from).length);
  const steps = Math.max(...after);
  return { ms: steps > 0 ? (to - from) / steps : NaN, tokens: Math.round(times.reduce((s, t) => s + t.length, 0) / times.length) };
}

function median(xs: number[]): number {
  const s = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

/** The matcher alone: seeded random walks through the grammar, µs per filled and accepted token. */
async function matcherCost(served: ServedModel, tokens: number): Promise<number> {
  const compiled = await prepareStructuredOutput(REQUEST, structuredModel(served));
  const V = served.config.vocabSize;
  const mask = new Int32Array(Math.ceil(V / 32));
  let rng = 12345;
  let spent = 0;
  let done = 0;
  while (done < tokens) {
    const [c] = choiceConstraints(compiled, 1, { tokenizer: served.tokenizer, reasoning: false });
    try {
      while (done < tokens && !c!.isTerminated()) {
        const t0 = performance.now();
        c!.fillNextTokenBitmask(mask);
        spent += performance.now() - t0;
        const allowed: number[] = [];
        for (let w = 0; w < mask.length; w++) for (let b = mask[w]; b !== 0; b &= b - 1) allowed.push(w * 32 + 31 - Math.clz32(b & -b));
        rng = (rng * 1103515245 + 12345) >>> 0;
        // Prefer staying in the document (a stop token would end the walk early).
        const inside = allowed.filter((id) => !served.eosTokenIds.includes(id));
        const pick = (inside.length ? inside : allowed)[rng % (inside.length || allowed.length)];
        const t1 = performance.now();
        c!.acceptToken(pick);
        spent += performance.now() - t1;
        done++;
      }
    } finally {
      c!.dispose();
    }
  }
  return (1000 * spent) / tokens;
}

export async function runStructuredBench(
  gpu: GpuContext,
  options: StructuredBenchOptions,
  log: (line: string) => void = () => {},
): Promise<StructuredBenchResult[]> {
  const quick = options.quick ?? gpu.description.adapter.isSoftware;
  const steps = options.decodeSteps ?? (quick ? 12 : 32);
  const batches = options.batches ?? (quick ? [1] : [1, 8]);
  const rounds = quick ? 3 : 5;
  const results: StructuredBenchResult[] = [];
  for (const name of options.models) {
    const bm = await benchModel(name, { layers: options.layers ?? (quick && name !== 'tiny-chat' ? 4 : undefined) });
    const cfg = bm.files.config;
    log(`structured bench: ${name} (${cfg.numLayers} layers, vocab ${cfg.vocabSize})`);
    const engine = new Engine(gpu, {
      source: () => Promise.reject(new Error('the bench loads its models itself')),
      maxSeqs: Math.max(...batches, 8),
      prefillChunk: 64,
      maxModelLen: 16 + steps + 64,
      kvCacheBytes: Math.max(8 << 20, 2 * cfg.numLayers * cfg.numKvHeads * cfg.headDim * 4 * (16 + steps + 80) * Math.max(...batches, 1)),
    });
    const served = await engine.loadFiles(name, bm.files);
    const model = engine.models[0];
    try {
      const t0 = performance.now();
      // A schema no other section compiled: the first compile is cold (the tokenizer's info included).
      const compiled = await prepareStructuredOutput(REQUEST, structuredModel(served));
      const compileMs = performance.now() - t0;
      const t1 = performance.now();
      await prepareStructuredOutput(REQUEST, structuredModel(served));
      const cacheHitMs = performance.now() - t1;
      const matcherUsPerToken = await matcherCost(served, quick ? 400 : 2000);
      log(
        `  compile ${compileMs.toFixed(0)} ms (cache hit ${cacheHitMs.toFixed(2)} ms), matcher ${matcherUsPerToken.toFixed(1)} µs per token`,
      );

      const decode: ConstraintDecodeFigures[] = [];
      for (const B of batches) {
        const spent = { ms: 0, calls: 0 };
        const run = (seed: number, kind: 'free' | 'unpipelined' | 'schema') =>
          Promise.all(
            Array.from({ length: B }, (_, i) => {
              const c =
                kind === 'schema'
                  ? new Timed(choiceConstraints(compiled, 1, { tokenizer: served.tokenizer, reasoning: false })[0]!, spent)
                  : kind === 'unpipelined'
                    ? new AllowAll()
                    : null;
              return tokenTimes(engine.generate(request(name, prompt(16, cfg.vocabSize, seed + i), steps + 1, seed + i, c)));
            }),
          );
        // Warm-ups compile this batch size's graphs (free and masked samplers).
        await run(100 * B, 'free');
        await run(200 * B, 'schema');
        // Rounds alternate free and constrained runs and each figure is the median round, so a
        // burst of load on a shared machine does not land on one side only.
        const free: number[] = [];
        const unpipelined: number[] = [];
        const constrained: number[] = [];
        let tokens = 0;
        spent.ms = 0;
        spent.calls = 0;
        for (let r = 0; r < rounds; r++) {
          free.push(stepMs(await run(1000 * B + 10 * r, 'free')).ms);
          unpipelined.push(stepMs(await run(1000 * B + 10 * r, 'unpipelined')).ms);
          const c = stepMs(await run(2000 * B + 10 * r, 'schema'));
          constrained.push(c.ms);
          tokens += c.tokens / rounds;
        }
        const f = median(free);
        const u = median(unpipelined);
        const c = median(constrained);
        const matcherMsPerStep = (spent.ms / Math.max(1, spent.calls)) * B;
        decode.push({
          batch: B,
          freeStepMs: f,
          unpipelinedStepMs: u,
          constrainedStepMs: c,
          matcherMsPerStep,
          overheadMsPerToken: c - f,
          constrainedTokens: Math.round(tokens),
        });
        log(
          `  batch ${B}: ${f.toFixed(2)} ms per step free, ${u.toFixed(2)} unpipelined, ${c.toFixed(2)} with the schema, of which ${matcherMsPerStep.toFixed(2)} in the matchers (medians of ${rounds} rounds; ${Math.round(tokens)} tokens per sequence)`,
        );
      }
      const jumpForward = await jumpForwardFigures(engine, served, name, rounds);
      log(
        `  jump-forward: ${jumpForward.tokens} tokens per run; ${jumpForward.stepsPerTokenOn.toFixed(2)} steps per token with it, ${jumpForward.stepsPerTokenOff.toFixed(2)} without; ${jumpForward.tokensPerSecondOn.toFixed(1)} vs ${jumpForward.tokensPerSecondOff.toFixed(1)} tokens/s`,
      );
      results.push({
        jumpForward,
        model: name,
        layers: cfg.numLayers,
        totalLayers: bm.totalLayers,
        vocabSize: cfg.vocabSize,
        tokenizerVocab: served.tokenizer.vocabSize,
        compileMs,
        cacheHitMs,
        matcherUsPerToken,
        decode,
      });
    } finally {
      await engine.kernelContext.device.queue.onSubmittedWorkDone();
      model.destroy();
    }
  }
  return results;
}

/**
 * One constrained sequence on FIXED_KEYS_SCHEMA, `rounds` seeds, with jump-forward on and off
 * (alternating, so load on a shared machine falls on both): output tokens, decode steps (the
 * scheduler's count) and wall time from the first token to the last.
 */
async function jumpForwardFigures(engine: Engine, served: ServedModel, name: string, rounds: number): Promise<JumpForwardFigures> {
  const compiled = await prepareStructuredOutput({ structured_outputs: { json: FIXED_KEYS_SCHEMA } }, structuredModel(served));
  const scheduler = engine.models[0].scheduler;
  const V = served.config.vocabSize;
  const total = { on: { tokens: 0, steps: 0, ms: 0 }, off: { tokens: 0, steps: 0, ms: 0 } };
  const wasOn = scheduler.jumpForward;
  const runOnce = async (seed: number, on: boolean) => {
    scheduler.jumpForward = on;
    const steps = scheduler.stats.decodeSteps;
    const [c] = choiceConstraints(compiled, 1, { tokenizer: served.tokenizer, reasoning: false });
    const times = await tokenTimes(engine.generate(request(name, prompt(16, V, seed), 96, seed, c)));
    const t = total[on ? 'on' : 'off'];
    t.tokens += times.length;
    t.steps += scheduler.stats.decodeSteps - steps;
    t.ms += times[times.length - 1] - times[0];
  };
  await runOnce(7, true); // warm-up: the multi-token graph's pipelines
  total.on = { tokens: 0, steps: 0, ms: 0 };
  for (let r = 0; r < rounds; r++) {
    await runOnce(3000 + r, false);
    await runOnce(3000 + r, true);
  }
  scheduler.jumpForward = wasOn;
  // The first token comes from the prefill step: steps and time count from it.
  const perToken = (t: typeof total.on) => t.steps / Math.max(1, t.tokens - rounds);
  const perSecond = (t: typeof total.on) => (1000 * (t.tokens - rounds)) / t.ms;
  return {
    tokens: Math.round(total.on.tokens / rounds),
    stepsPerTokenOn: perToken(total.on),
    stepsPerTokenOff: perToken(total.off),
    tokensPerSecondOn: perSecond(total.on),
    tokensPerSecondOff: perSecond(total.off),
  };
}
