// Which model a chat request names: every name form ART clients use, resolved against the real
// store (fake-indexeddb) and the bundled catalogue; checkpoints as LoRA adapters read back from
// IndexedDB (PEFT files written with the safetensors writer); and GET /v1/models.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeFromF32 } from '../../../src/engine/tensor/dtype';
import { writeSafetensors } from '../../../src/engine/model/files/safetensors-writer';
import { authenticate } from '../../../src/service/api-keys';
import type { Principal } from '../../../src/service/principal';
import { addCheckpoint } from '../../../src/service/checkpoints';
import { checkpointAdapter } from '../../../src/service/adapters/checkpoint-adapter';
import { AdapterError, parseAdapterConfig } from '../../../src/service/adapters/parse';
import { checkpointName, parseModelName } from '../../../src/service/chat/model-names';
import { resolveModel } from '../../../src/service/chat/resolve-model';
import { NotFoundError } from '../../../src/service/errors';
import { getCheckpointByStep } from '../../../src/store/checkpoints';
import { getModel } from '../../../src/store/models';
import { startEngine, type TestEngine } from '../api/engine-fixture';

describe('parseModelName', () => {
  it('reads every form with its step', () => {
    expect(parseModelName('wandb-artifact:///ent/proj/agent:step3')).toEqual({
      path: 'ent/proj/agent',
      parts: ['ent', 'proj', 'agent'],
      step: 3,
      artifact: true,
    });
    expect(parseModelName('wandb-artifact://ent/proj/agent')).toMatchObject({
      parts: ['ent', 'proj', 'agent'],
      step: null,
      artifact: true,
    });
    expect(parseModelName('ent/proj/agent:step0')).toMatchObject({ parts: ['ent', 'proj', 'agent'], step: 0, artifact: false });
    expect(parseModelName('agent@12')).toMatchObject({ parts: ['agent'], step: 12 });
    expect(parseModelName('ent/proj/agent@2')).toMatchObject({ parts: ['ent', 'proj', 'agent'], step: 2 });
    expect(parseModelName('ent/proj/agent:latest')).toMatchObject({ step: null });
    expect(parseModelName('hearth/tiny-chat')).toMatchObject({ parts: ['hearth', 'tiny-chat'], step: null });
  });

  it('refuses what no form accepts', () => {
    for (const bad of ['', 'a//b', 'wandb-artifact:///a/b', 'a/b/c/d', ':step3', 'x@99999999999999999999'])
      expect(parseModelName(bad), bad).toBeNull();
  });

  it('writes the canonical inference name', () => {
    expect(checkpointName({ entity: 'e', project: 'p', name: 'n' }, 4)).toBe('wandb-artifact:///e/p/n:step4');
    expect(checkpointName({ entity: 'e', project: 'p', name: 'n' }, null)).toBe('wandb-artifact:///e/p/n');
  });
});

const enc = (s: string) => new TextEncoder().encode(s);

/** A real PEFT adapter for q_proj and v_proj of layer 0 of tiny-chat (hidden 256, r 4). */
function peftAdapter(fill: number) {
  const r = 4;
  const tensors = ['q_proj', 'v_proj'].flatMap((m) => {
    const out = m === 'q_proj' ? 256 : 128;
    return [
      {
        name: `base_model.model.model.layers.0.self_attn.${m}.lora_A.weight`,
        dtype: 'f32' as const,
        shape: [r, 256],
        data: encodeFromF32(new Float32Array(r * 256).fill(fill), 'f32'),
      },
      {
        name: `base_model.model.model.layers.0.self_attn.${m}.lora_B.weight`,
        dtype: 'f32' as const,
        shape: [out, r],
        data: encodeFromF32(new Float32Array(out * r).fill(-fill), 'f32'),
      },
    ];
  });
  return {
    adapterConfig: enc(
      JSON.stringify({
        peft_type: 'LORA',
        r,
        lora_alpha: 8,
        target_modules: ['q_proj', 'v_proj'],
        bias: 'none',
        use_rslora: false,
        base_model_name_or_path: 'hearth/tiny-chat',
      }),
    ),
    adapterModel: writeSafetensors(tensors),
  };
}

describe('resolving names and checkpoints against the store', () => {
  let e: TestEngine;
  let admin: Principal;
  let other: Principal;
  let modelId: string;

  beforeAll(async () => {
    e = await startEngine();
    admin = await authenticate(e.db, `Bearer ${e.adminKey}`);
    const created = await e.call('POST', '/v1/preview/api-keys', { body: { name: 'other' } });
    other = await authenticate(e.db, `Bearer ${created.json.key}`);
    const reg = await e.call('POST', '/v1/preview/models', {
      body: { entity: null, project: 'proj', name: 'agent', base_model: 'hearth/tiny-qwen3', return_existing: true },
    });
    modelId = reg.json.id;
    await addCheckpoint(e.services, modelId, admin.id, peftAdapter(0.5));
    await addCheckpoint(e.services, modelId, admin.id, peftAdapter(0.25));
  });
  afterAll(() => e.close());

  it('serves base models by id and the default for an omitted or empty name', async () => {
    expect(await resolveModel(e.services, admin, 'hearth/tiny-qwen2')).toMatchObject({
      base: { id: 'hearth/tiny-qwen2' },
      servedName: 'hearth/tiny-qwen2',
      checkpoint: null,
    });
    for (const name of [undefined, '']) expect((await resolveModel(e.services, admin, name)).base.id).toBe('hearth/tiny-chat');
  });

  it('resolves every checkpoint name form to the model, the latest step when none is given', async () => {
    const forms: [string, number][] = [
      ['wandb-artifact:///local/proj/agent', 2],
      ['wandb-artifact:///local/proj/agent:step1', 1],
      ['wandb-artifact://local/proj/agent:step0', 0],
      ['local/proj/agent', 2],
      ['local/proj/agent:step1', 1],
      ['agent@1', 1],
      ['agent', 2],
      [`${modelId}:step0`, 0],
      [`${modelId}@2`, 2],
    ];
    for (const [name, step] of forms) {
      const r = await resolveModel(e.services, admin, name);
      expect(r.checkpoint?.record.step, name).toBe(step);
      expect(r.base.id).toBe('hearth/tiny-qwen3');
      expect(r.servedName).toBe(name);
    }
  });

  it("answers vLLM 404s for unknown names, missing steps and other principals' models", async () => {
    await expect(resolveModel(e.services, admin, 'local/proj/nobody')).rejects.toThrow('The model `local/proj/nobody` does not exist.');
    await expect(resolveModel(e.services, admin, 'local/proj/agent:step9')).rejects.toThrow(
      /does not exist\. .* has no checkpoint at step 9/,
    );
    await expect(resolveModel(e.services, other, 'local/proj/agent')).rejects.toBeInstanceOf(NotFoundError);
    await expect(resolveModel(e.services, other, modelId)).rejects.toBeInstanceOf(NotFoundError);
  });

  it('turns a checkpoint into a LoRA adapter whose load() reads its tensors from IndexedDB; step 0 is the base model', async () => {
    const model = (await getModel(e.db, admin.id, modelId))!;
    const step0 = (await getCheckpointByStep(e.db, modelId, 0))!;
    expect(await checkpointAdapter(e.services, admin, model, step0)).toBeNull();
    const step1 = (await getCheckpointByStep(e.db, modelId, 1))!;
    const adapter = (await checkpointAdapter(e.services, admin, model, step1))!;
    expect(adapter.key).toBe(`checkpoint:${step1.id}`);
    expect(adapter.config).toEqual({ rank: 4, alpha: 8, targetModules: ['q_proj', 'v_proj'], useRslora: false });
    const tensors = await adapter.load();
    expect(tensors.map((t) => t.name).sort()).toEqual([
      'base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight',
      'base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight',
      'base_model.model.model.layers.0.self_attn.v_proj.lora_A.weight',
      'base_model.model.model.layers.0.self_attn.v_proj.lora_B.weight',
    ]);
    const a = tensors.find((t) => t.name.endsWith('q_proj.lora_A.weight'))!;
    expect(a.shape).toEqual([4, 256]);
    expect(new Float32Array(a.data.slice().buffer)[17]).toBe(0.5);
    // Another checkpoint is another adapter.
    const step2 = (await getCheckpointByStep(e.db, modelId, 2))!;
    const t2 = await (await checkpointAdapter(e.services, admin, model, step2))!.load();
    expect(new Float32Array(t2.find((t) => t.name.endsWith('q_proj.lora_A.weight'))!.data.slice().buffer)[0]).toBe(0.25);
  });

  it('lists base models and every checkpoint of the caller with max_model_len on GET /v1/models', async () => {
    const res = await e.call('GET', '/v1/models');
    expect(res.status).toBe(200);
    expect(res.json.object).toBe('list');
    const ids = res.json.data.map((m: { id: string }) => m.id);
    expect(ids.slice(0, 4).sort()).toEqual(['hearth/tiny-chat', 'hearth/tiny-json', 'hearth/tiny-qwen2', 'hearth/tiny-qwen3']);
    expect(ids).toContain('wandb-artifact:///local/proj/agent:step0');
    expect(ids).toContain('wandb-artifact:///local/proj/agent:step2');
    const card = res.json.data.find((m: { id: string }) => m.id === 'wandb-artifact:///local/proj/agent:step1');
    expect(card).toMatchObject({
      object: 'model',
      parent: 'hearth/tiny-qwen3',
      root: 'wandb-artifact:///local/proj/agent',
      owned_by: 'local',
    });
    const base = res.json.data.find((m: { id: string }) => m.id === 'hearth/tiny-chat');
    expect(base.max_model_len).toBe(2048);
    expect(card.max_model_len).toBeGreaterThan(0);
    // Another principal sees only the base models.
    const created = await e.call('POST', '/v1/preview/api-keys', { body: { name: 'third' } });
    const theirs = await e.call('GET', '/v1/models', { key: created.json.key });
    expect(theirs.json.data.map((m: { id: string }) => m.id).sort()).toEqual([
      'hearth/tiny-chat',
      'hearth/tiny-json',
      'hearth/tiny-qwen2',
      'hearth/tiny-qwen3',
    ]);
    expect((await e.call('GET', '/v1/models', { key: null })).status).toBe(401);
  });
});

describe('parseAdapterConfig', () => {
  it('reads PEFT fields and their defaults', () => {
    expect(
      parseAdapterConfig({ r: 8, lora_alpha: 16, target_modules: ['q_proj', 'model.layers.0.mlp.down_proj'], use_rslora: true }),
    ).toEqual({
      rank: 8,
      alpha: 16,
      targetModules: ['q_proj', 'down_proj'],
      useRslora: true,
    });
    expect(parseAdapterConfig({ r: 2, target_modules: 'all-linear' }).targetModules).toHaveLength(7);
    expect(parseAdapterConfig({ r: 2, target_modules: '.*\\.(q_proj|k_proj)' }).targetModules).toEqual(['q_proj', 'k_proj']);
    expect(parseAdapterConfig({ r: 2 }).alpha).toBe(8);
  });

  it('refuses adapters Hearth would serve wrongly, naming the feature', () => {
    expect(() => parseAdapterConfig({ r: 0 })).toThrow(/"r" must be a positive integer/);
    expect(() => parseAdapterConfig({ r: 4, use_dora: true })).toThrow(/DoRA/);
    expect(() => parseAdapterConfig({ r: 4, bias: 'all' })).toThrow(/trained biases/);
    expect(() => parseAdapterConfig({ r: 4, rank_pattern: { q_proj: 2 } })).toThrow(/rank_pattern/);
    expect(() => parseAdapterConfig({ r: 4, target_modules: ['embed_tokens'] })).toThrow(AdapterError);
    expect(() => parseAdapterConfig({ r: 4, rank_pattern: {}, modules_to_save: null })).not.toThrow();
  });
});
