// Which model a chat completion runs, through the real Service Worker and engine worker with the
// official `openai` SDK: a PEFT LoRA adapter (made here with seeded random weights, uploaded
// through POST /v1/preview/models/import) registers a model whose step 0 is the base model and
// step 1 the adapter; every name form ART uses reaches the right checkpoint, `model` in the
// answer says the name as asked, GET /v1/models lists the checkpoints with max_model_len, and
// checkpoints of one base model served in the same batch each give what they give alone.
// The playground streams a reply and shows its token logprobs.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tensorFromF32 } from '../../src/engine/tensor/tensor-data';
import { parseModelConfig } from '../../src/engine/model/config/hf-config';
import { writeSafetensors } from '../../src/engine/model/files/safetensors-writer';
import { loraModuleDims, loraTensorName, type LoraModule } from '../../src/engine/model/lora/peft-modules';
import { Rng } from '../../src/engine/tensor/random';
import { ASK, complete, MODEL, ok } from './chat-helpers';
import { api, loadOpenAI, startHearth, type Hearth } from './harness';

let h: Hearth;
/** The imported model (POST /v1/preview/models/import's answer). */
let model: { id: string; entity: string; project: string; name: string };

const RANK = 8;
const MODULES: LoraModule[] = ['q_proj', 'v_proj', 'o_proj'];

/** adapter_config.json and adapter_model.safetensors of a seeded random rank-8 adapter for tiny-chat. */
function makeAdapter(): { config: string; weights: Buffer } {
  const cfg = parseModelConfig(JSON.parse(readFileSync(new URL('../../public/models/tiny-chat/config.json', import.meta.url), 'utf8')));
  const rng = new Rng(20261121);
  const uniform = (n: number, bound: number) => Float32Array.from({ length: n }, () => (2 * rng.uniform() - 1) * bound);
  const tensors = [];
  for (let layer = 0; layer < cfg.numLayers; layer++) {
    for (const m of MODULES) {
      const d = loraModuleDims(cfg, m);
      // B is not zero (an untrained adapter would be the base model): strong enough to move the logits.
      tensors.push(tensorFromF32(loraTensorName(layer, m, 'A'), [RANK, d.in], uniform(RANK * d.in, 1 / Math.sqrt(d.in)), 'f32'));
      tensors.push(tensorFromF32(loraTensorName(layer, m, 'B'), [d.out, RANK], uniform(d.out * RANK, 0.3), 'f32'));
    }
  }
  const config = {
    peft_type: 'LORA',
    r: RANK,
    lora_alpha: 16,
    target_modules: MODULES,
    lora_dropout: 0,
    bias: 'none',
    task_type: 'CAUSAL_LM',
    base_model_name_or_path: MODEL,
  };
  return { config: JSON.stringify(config), weights: Buffer.from(writeSafetensors(tensors)) };
}

beforeAll(async () => {
  h = await startHearth();
  await loadOpenAI(h.page);
  const adapter = makeAdapter();
  h.server.files.set('/__e2e/adapter_model.safetensors', { body: adapter.weights, type: 'application/octet-stream' });
  const imported = await h.page.evaluate(
    async ({ key, config, base }) => {
      const form = new FormData();
      form.set('project', 'e2e');
      form.set('name', 'adder');
      form.set('base_model', base);
      form.set('adapter_config.json', new Blob([config], { type: 'application/json' }), 'adapter_config.json');
      const weights = await (await fetch('/__e2e/adapter_model.safetensors')).blob();
      form.set('adapter_model.safetensors', weights, 'adapter_model.safetensors');
      const res = await fetch('/v1/preview/models/import', { method: 'POST', headers: { Authorization: `Bearer ${key}` }, body: form });
      return { status: res.status, body: await res.json() };
    },
    { key: h.key, config: adapter.config, base: MODEL },
  );
  expect(imported.status, JSON.stringify(imported.body)).toBe(200);
  model = imported.body;
});
afterAll(async () => {
  await h?.close();
});

/** Greedy, 3 visible tokens with their logprobs: enough to tell two models apart. */
const probe = (name: string | undefined) => ({
  ...(name === undefined ? {} : { model: name }),
  messages: ASK,
  temperature: 0,
  max_tokens: 3,
  ignore_eos: true,
  logit_bias: { '0': -100, '1': -100, '2': -100 },
  logprobs: true,
  return_token_ids: true,
});
const firstLogprob = (c: any): number => c.choices[0].logprobs.content[0].logprob;

describe('models and checkpoints', () => {
  it('every name form reaches its checkpoint; checkpoints share a batch and answer as alone', async () => {
    const full = `${model.entity}/${model.project}/${model.name}`;
    // Alone first: the base model and the adapter, one request at a time.
    const base = await ok(h.page, h.key, probe(MODEL));
    const adapted = await ok(h.page, h.key, probe(`${model.id}:step1`));
    expect(firstLogprob(adapted)).not.toBeCloseTo(firstLogprob(base), 3);

    const asBase = [MODEL, undefined, '', `${model.id}:step0`, `${model.name}@0`, `wandb-artifact:///${full}:step0`];
    const asAdapter = [
      model.id,
      `${model.id}@1`,
      `wandb-artifact:///${full}:step1`,
      `wandb-artifact:///${full}`,
      full,
      `${full}:step1`,
      `${model.name}@1`,
      model.name,
    ];
    const names = [...asBase, ...asAdapter];
    const answers = await Promise.all(names.map((name) => ok(h.page, h.key, probe(name))));
    names.forEach((name, i) => {
      const want = i < asBase.length ? base : adapted;
      const got = answers[i];
      expect(got.model, `model for ${JSON.stringify(name)}`).toBe(name ? name : MODEL);
      expect(got.choices[0].token_ids, `tokens for ${JSON.stringify(name)}`).toEqual(want.choices[0].token_ids);
      got.choices[0].logprobs.content.forEach((e: any, t: number) =>
        expect(e.logprob, `${name} token ${t}`).toBeCloseTo(want.choices[0].logprobs.content[t].logprob, 3),
      );
    });

    const unknown = await Promise.all(
      [`${model.name}@7`, 'nobody/nothing/here', `${model.id}:step9`].map((name) => complete(h.page, h.key, probe(name))),
    );
    for (const u of unknown) expect(u).toMatchObject({ ok: false, status: 404, name: 'NotFoundError' });
    expect((unknown[0] as any).message).toContain('does not exist');
  }, 180_000);

  it('GET /v1/models lists the base models and the checkpoints with their context length', async () => {
    const list = await api(h.page, 'GET', '/v1/models', { key: h.key });
    expect(list.status).toBe(200);
    const full = `${model.entity}/${model.project}/${model.name}`;
    const cards = list.json.data;
    expect(cards.find((c: any) => c.id === MODEL)).toMatchObject({ object: 'model', root: MODEL, parent: null, max_model_len: 2048 });
    for (const step of [0, 1]) {
      expect(cards.find((c: any) => c.id === `wandb-artifact:///${full}:step${step}`)).toMatchObject({
        parent: MODEL,
        max_model_len: 2048,
        owned_by: model.entity,
      });
    }
  });
});

describe('the chat playground', () => {
  it('streams a reply and shows each token with its logprob', async () => {
    await h.page.getByRole('link', { name: 'Chat' }).click();
    const playground = h.page.locator('hearth-chat-playground');
    await playground.waitFor();
    await playground.getByLabel('Temperature').fill('0');
    await playground.getByLabel('Max tokens').fill('3');
    await playground.getByLabel('Show token logprobs').check();
    await playground.getByLabel('Message').fill(ASK[0].content);
    await playground.getByRole('button', { name: 'Send' }).click();
    const finish = playground.locator('[data-role="assistant"] [data-field="finish"]');
    await finish.waitFor({ timeout: 120_000 });
    const expected = await ok(h.page, h.key, {
      model: MODEL,
      messages: ASK,
      temperature: 0,
      max_completion_tokens: 3,
      logprobs: true,
      top_logprobs: 5,
    });
    const tokens = playground.locator('[data-role="assistant"] [data-token]');
    const shown = await tokens.allInnerTexts();
    const content = expected.choices[0].logprobs.content;
    expect(shown.join('')).toBe(content.map((e: any) => e.token).join(''));
    expect(shown).toHaveLength(content.length);
    // Each token's tooltip names its logprob and the alternatives.
    const title = await tokens.first().getAttribute('title');
    expect(title).toContain(`logprob ${content[0].logprob.toFixed(4)}`);
    expect(title).toContain(JSON.stringify(content[0].top_logprobs[1].token));
    expect(await finish.innerText()).toContain(expected.choices[0].finish_reason);
    await h.page.screenshot({ path: 'test-results/ui-chat-logprobs.png' });
  }, 180_000);
});
