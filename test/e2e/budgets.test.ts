// Hostile programs and files must not stall or exhaust the one engine (issue 10, items 1-3 and
// the grammar part of 7), through the real Service Worker, engine worker and IndexedDB: a chat
// template that loops for hours or builds a billion-item range, a structured-output constraint
// whose compile would run for minutes, a tokenizer.json or tokenizer_config.json of an uploaded
// model holding a regex bomb or a looping template, an adapter_config.json whose target_modules
// is a regex bomb, and an adapter zip that inflates past its limits. Each is refused with its
// family's 4xx naming the field or file, while a second principal's chat completes beside it.
import { readFileSync } from 'node:fs';
import { zipSync } from 'fflate';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ASK, complete, MODEL } from './chat-helpers';
import { api, loadOpenAI, startHearth, type Hearth } from './harness';
import { beside as besideOf, bystanderKey, importAdapter as importInto, refused, TINY_CHAT_DIR, uploadModelWith } from './hostile-helpers';

let h: Hearth;
/** The bystander: another principal chatting while the hostile requests run. */
let bystander: string;

beforeAll(async () => {
  h = await startHearth();
  await loadOpenAI(h.page);
  bystander = await bystanderKey(h);
});
afterAll(async () => {
  await h?.close();
});

/** Runs `hostile` and the bystander's short chat at the same time; both must answer. */
const beside = <T>(hostile: () => Promise<T>) => besideOf(h, bystander, hostile);

describe('programs in chat requests', () => {
  it('a chat_template that loops for hours or builds range(1e9) is a 400 on chat_template', async () => {
    for (const chat_template of [
      '{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}',
      '{{ range(1000000000) | length }}',
    ]) {
      const outcome = refused(await beside(() => complete(h.page, h.key, { model: MODEL, messages: ASK, max_tokens: 2, chat_template })));
      expect(outcome.status).toBe(400);
      expect(outcome.param).toBe('chat_template');
      expect(outcome.message).toMatch(/chat template exceeds its budget/);
    }
  });

  it('a structured-output constraint whose compile would run for minutes is a 400 naming the field', async () => {
    const regex = refused(
      await beside(() =>
        complete(h.page, h.key, { model: MODEL, messages: ASK, max_tokens: 2, structured_outputs: { regex: '((ab|cd){0,1000}){0,1000}' } }),
      ),
    );
    expect(regex).toMatchObject({ status: 400, param: 'structured_outputs' });
    expect(regex.message).toMatch(/counts multiply to 1000000 .* over Hearth's limit of 10000/);
    const schema = { type: 'object', properties: { note: { type: 'string', maxLength: 100_000_000 } } };
    const json = refused(
      await beside(() =>
        complete(h.page, h.key, {
          model: MODEL,
          messages: ASK,
          max_tokens: 2,
          response_format: { type: 'json_schema', json_schema: { name: 'n', schema } },
        }),
      ),
    );
    expect(json).toMatchObject({ status: 400, param: 'response_format' });
    expect(json.message).toMatch(/maxLength 100000000 at \$\.properties\.note/);
  });
});

describe('files of an uploaded model', () => {
  const dir = TINY_CHAT_DIR;
  const uploadWith = (replaced: Record<string, string>) => uploadModelWith(h, replaced);

  it('a tokenizer.json Split pattern that backtracks catastrophically is a 422 naming the file and field', async () => {
    const tokenizer = JSON.parse(readFileSync(dir + 'tokenizer.json', 'utf8'));
    tokenizer.pre_tokenizer.pretokenizers.unshift({ type: 'Split', pattern: { Regex: '(a|aa)*b' }, behavior: 'Isolated', invert: false });
    const added = await beside(() => uploadWith({ 'tokenizer.json': JSON.stringify(tokenizer) }));
    expect(added.status, JSON.stringify(added.json)).toBe(422);
    expect(JSON.stringify(added.json.detail)).toMatch(/tokenizer\.json: pre_tokenizer\.pretokenizers\[0\]\.pattern\.Regex is refused/);
    const list = (await api(h.page, 'GET', '/v1/preview/base-models', { key: h.key })).json.data.map((m: { id: string }) => m.id);
    expect(list).not.toContain('local/hostile');
  });

  it('a tokenizer_config.json chat_template that loops is a 422 naming the file and field', async () => {
    const config = JSON.parse(readFileSync(dir + 'tokenizer_config.json', 'utf8'));
    config.chat_template = '{% for i in range(100000) %}{% for m in messages %}{% endfor %}{% endfor %}' + config.chat_template;
    const added = await beside(() => uploadWith({ 'tokenizer_config.json': JSON.stringify(config) }));
    expect(added.status, JSON.stringify(added.json)).toBe(422);
    expect(JSON.stringify(added.json.detail)).toMatch(/tokenizer_config\.json: \\"chat_template\\": chat template exceeds its budget/);
  });
});

describe('adapter import', () => {
  const importAdapter = (name: string, files: Record<string, Uint8Array>) => importInto(h, name, files);
  const text = (s: string) => new TextEncoder().encode(s);

  it('a target_modules regex bomb in adapter_config.json is a 422 naming the file and field', async () => {
    const config = text(JSON.stringify({ peft_type: 'LORA', r: 8, lora_alpha: 16, target_modules: '(.|.|.|.)*X', bias: 'none' }));
    const res = await beside(() =>
      importAdapter('bomb', { 'adapter_config.json': config, 'adapter_model.safetensors': new Uint8Array(8) }),
    );
    expect(res.status, JSON.stringify(res.json)).toBe(422);
    expect(JSON.stringify(res.json.detail)).toMatch(/adapter_config\.json: target_modules pattern is refused \(a repeated group holds a/);
  });

  it('a zip whose adapter_config.json inflates past its limit is refused from the directory, before inflating', async () => {
    // 64 MiB of spaces deflate to about 64 KiB: the directory's size is checked before inflating.
    const bomb = zipSync(
      { 'adapter_config.json': new Uint8Array(64 * 2 ** 20).fill(32), 'adapter_model.safetensors': new Uint8Array(8) },
      { level: 9 },
    );
    expect(bomb.length).toBeLessThan(2 ** 20);
    const res = await beside(() => importAdapter('zip-bomb', { 'adapter.zip': bomb }));
    expect(res.status, JSON.stringify(res.json)).toBe(422);
    expect(JSON.stringify(res.json.detail)).toMatch(
      /adapter\.zip is refused: adapter_config\.json is 67108864 bytes uncompressed, over the limit of 1048576/,
    );
  });

  it('a zip holding adapter_model.bin says to save safetensors', async () => {
    const zip = zipSync({ 'adapter_config.json': text('{"r": 8}'), 'adapter_model.bin': new Uint8Array(8) });
    const res = await importAdapter('pickle', { 'adapter.zip': zip });
    expect(res.status).toBe(422);
    expect(JSON.stringify(res.json.detail)).toMatch(/adapter_model\.bin is a PyTorch pickle/);
  });
});
