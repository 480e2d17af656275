// Loading whole repositories: the bundled models from disk, sharded repositories, and every way a
// repository can be incomplete or inconsistent (each must fail before a weight is handed out,
// with a message naming the file and the problem), plus a load over HTTP that works offline the
// second time from the cache.
import { readFileSync, readdirSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { bundledSource, parseCatalog } from '../../../src/engine/model/sources/catalog';
import { ChatTemplateError } from '../../../src/engine/model/text/chat-template';
import { ConfigError } from '../../../src/engine/model/config/fields';
import { loadModelFiles, RepositoryError } from '../../../src/engine/model/files/repo';
import { SafetensorsError, SafetensorsFile } from '../../../src/engine/model/files/safetensors';
import { writeSafetensors } from '../../../src/engine/model/files/safetensors-writer';
import { BundledSource } from '../../../src/engine/model/sources/bundled-source';
import { DirectorySource } from '../../../src/engine/model/sources/directory-source';
import { MemoryFileCache } from '../../../src/engine/model/sources/file-cache';
import { FilesSource } from '../../../src/engine/model/sources/files-source';
import type { ModelSource } from '../../../src/engine/model/sources/source';
import { UrlSource } from '../../../src/engine/model/sources/url-source';
import type { TensorData } from '../../../src/engine/tensor/tensor-data';
import { planParameters } from '../../../src/engine/model/weights/parameter-plan';
import { FileServer } from './http-fixture';

const publicModels = new URL('../../../public/models/', import.meta.url);
const catalog = parseCatalog(JSON.parse(readFileSync(new URL('index.json', publicModels), 'utf8')));
const folder = (name: string) => new URL(`${name}/`, publicModels);
const fileBytes = (model: string, file: string) => new Uint8Array(readFileSync(new URL(file, folder(model))));

/** A picked-files repository made from a bundled model, with some files replaced or removed. */
function repoFrom(model: string, changes: Record<string, Uint8Array | string | null> = {}): FilesSource {
  const files = new Map<string, Uint8Array | string>();
  for (const name of readdirSync(folder(model))) files.set(name, fileBytes(model, name));
  for (const [name, content] of Object.entries(changes)) {
    if (content === null) files.delete(name);
    else files.set(name, content);
  }
  return new FilesSource([...files].map(([name, content]) => new File([content as BlobPart], name)));
}

/** Records which files a load opened. */
function recording(source: ModelSource): { source: ModelSource; opened: string[] } {
  const opened: string[] = [];
  return {
    opened,
    source: {
      id: source.id,
      label: source.label,
      list: () => source.list(),
      open: (file, req) => {
        opened.push(file);
        return source.open(file, req);
      },
    },
  };
}

async function allTensors(source: ModelSource): Promise<TensorData[]> {
  const files = await loadModelFiles(source);
  const out: TensorData[] = [];
  for await (const t of files.tensors()) out.push(t);
  return out;
}

const configOf = (model: string) => JSON.parse(new TextDecoder().decode(fileBytes(model, 'config.json')));

describe('the bundled models', () => {
  it.each(catalog.map((e) => [e.id, e] as const))('%s loads from public/ with every planned weight', async (_id, entry) => {
    const files = await loadModelFiles(bundledSource(entry));
    expect(files.sourceId).toBe(entry.id);
    expect(files.config.arch).toBe(entry.architecture);
    expect(files.eosTokenIds).toEqual([2, 0]);
    expect(files.tokenizer.vocabSize).toBe(files.config.vocabSize);
    expect(files.chatTemplates.available).toBe(true);
    const plan = planParameters(files.config);
    expect(files.weights.map((w) => w.name).sort()).toEqual(plan.map((p) => p.name).sort());
    let streamed = 0;
    for await (const t of files.tensors()) {
      const want = plan.find((p) => p.name === t.name)!;
      expect(t.shape).toEqual(want.shape);
      streamed += t.data.byteLength;
    }
    expect(streamed).toBe(files.weightBytes);
    expect(entry.parameters).toBe(plan.reduce((n, p) => n + p.shape.reduce((a, b) => a * b, 1), 0));
  });

  it('tiny-qwen3 takes its template from chat_template.jinja, the others from tokenizer_config.json', async () => {
    const qwen3 = await loadModelFiles(new BundledSource('models/tiny-qwen3/'));
    expect(qwen3.files.chatTemplate).toContain('enable_thinking');
    expect((qwen3.files.tokenizerConfig as Record<string, unknown>).chat_template).toBeUndefined();
    const qwen2 = await loadModelFiles(new DirectorySource(folder('tiny-qwen2')));
    expect(qwen2.files.chatTemplate).toBeNull();
    expect(qwen2.chatTemplates.forRequest().render({ messages: [{ role: 'user', content: 'x' }] })).toContain('You are Qwen');
    expect(qwen2.generation).toMatchObject({ temperature: 0.7, topP: 0.8, topK: 20, repetitionPenalty: 1.05 });
  });

  it('a chat_template.jinja wins over the template in tokenizer_config.json', async () => {
    const files = await loadModelFiles(repoFrom('tiny-chat', { 'chat_template.jinja': 'FILE{{ messages | length }}' }));
    expect(files.chatTemplates.forRequest().render({ messages: [] })).toBe('FILE0');
  });
});

describe('sharded repositories', () => {
  it('loads model-0000N-of-0000M.safetensors through the index, tensor for tensor like one file', async () => {
    const single = await allTensors(repoFrom('tiny-qwen2'));
    const half = Math.ceil(single.length / 2);
    const shards = [single.slice(0, half), single.slice(half)];
    const names = ['model-00001-of-00002.safetensors', 'model-00002-of-00002.safetensors'];
    const index = { metadata: { total_size: single.reduce((s, t) => s + t.data.byteLength, 0) }, weight_map: {} as Record<string, string> };
    shards.forEach((ts, i) => ts.forEach((t) => (index.weight_map[t.name] = names[i])));
    const sharded = repoFrom('tiny-qwen2', {
      'model.safetensors': null,
      'model.safetensors.index.json': JSON.stringify(index),
      [names[0]]: writeSafetensors(shards[0]),
      [names[1]]: writeSafetensors(shards[1]),
    });
    const loaded = await loadModelFiles(sharded);
    expect(new Set(loaded.weights.map((w) => w.file))).toEqual(new Set(names));
    const fromShards = new Map((await allTensors(sharded)).map((t) => [t.name, t]));
    expect(fromShards.size).toBe(single.length);
    for (const t of single) {
      const s = fromShards.get(t.name)!;
      expect(s.dtype).toBe(t.dtype);
      expect(s.shape).toEqual(t.shape);
      expect(Buffer.compare(s.data, t.data)).toBe(0);
    }
  });

  it('a missing shard, or an index that points at the wrong shard, fails before any weight', async () => {
    const tensors = await allTensors(repoFrom('tiny-qwen2'));
    const weight_map = Object.fromEntries(tensors.map((t, i) => [t.name, i % 2 ? 'b.safetensors' : 'a.safetensors']));
    const a = writeSafetensors(tensors.filter((_, i) => i % 2 === 0));
    const b = writeSafetensors(tensors.filter((_, i) => i % 2 === 1));
    const index = JSON.stringify({ weight_map });
    await expect(
      loadModelFiles(repoFrom('tiny-qwen2', { 'model.safetensors': null, 'model.safetensors.index.json': index, 'a.safetensors': a })),
    ).rejects.toThrow(/model\.safetensors\.index\.json lists b\.safetensors, which is missing from picked files/);
    const swapped = repoFrom('tiny-qwen2', {
      'model.safetensors': null,
      'model.safetensors.index.json': index,
      'a.safetensors': b,
      'b.safetensors': a,
    });
    await expect(loadModelFiles(swapped)).rejects.toThrow(/puts \S+ in a\.safetensors, but a\.safetensors has no such tensor/);
    await expect(loadModelFiles(repoFrom('tiny-qwen2', { 'model.safetensors.index.json': '{"metadata": {}}' }))).rejects.toThrow(
      /missing "weight_map"/,
    );
  });
});

describe('broken repositories are refused, naming the problem', () => {
  it('missing files', async () => {
    await expect(loadModelFiles(repoFrom('tiny-chat', { 'config.json': null }))).rejects.toThrow(
      'config.json is missing from picked files',
    );
    await expect(loadModelFiles(repoFrom('tiny-chat', { 'tokenizer.json': null }))).rejects.toThrow(
      'tokenizer.json is missing from picked files',
    );
    await expect(loadModelFiles(repoFrom('tiny-chat', { 'model.safetensors': null }))).rejects.toThrow(
      'picked files has no model.safetensors or model.safetensors.index.json',
    );
    await expect(loadModelFiles(repoFrom('tiny-chat', { 'model.safetensors': null, 'pytorch_model.bin': 'x' }))).rejects.toThrow(
      /found pytorch_model\.bin; Hearth loads only safetensors weights/,
    );
    // Optional files may be absent.
    const bare = await loadModelFiles(repoFrom('tiny-chat', { 'generation_config.json': null, 'tokenizer_config.json': null }));
    expect(bare.chatTemplates.available).toBe(false);
    expect(bare.eosTokenIds).toEqual([2]); // from config.json alone
  });

  it('an unknown architecture fails on config.json, before any weight file is opened', async () => {
    const config = { ...configOf('tiny-chat'), architectures: ['GPTNeoXForCausalLM'] };
    const { source, opened } = recording(repoFrom('tiny-chat', { 'config.json': JSON.stringify(config) }));
    await expect(loadModelFiles(source)).rejects.toThrow(ConfigError);
    await expect(loadModelFiles(source)).rejects.toThrow(/unsupported architecture "GPTNeoXForCausalLM"/);
    expect(opened).not.toContain('model.safetensors');
  });

  it('a corrupted safetensors header', async () => {
    const bytes = fileBytes('tiny-qwen3', 'model.safetensors').slice();
    bytes[8] = 0x5b; // "[" instead of "{"
    await expect(loadModelFiles(repoFrom('tiny-qwen3', { 'model.safetensors': bytes }))).rejects.toThrow(SafetensorsError);
    const truncated = fileBytes('tiny-qwen3', 'model.safetensors').slice(0, 100_000);
    await expect(loadModelFiles(repoFrom('tiny-qwen3', { 'model.safetensors': truncated }))).rejects.toThrow(
      /^model\.safetensors: corrupt header: tensors need \d+ bytes of data but the file holds \d+ \(truncated file\?\)$/,
    );
  });

  it('a missing tensor, a wrong shape, an unexpected tensor, a dtype that is not a weight dtype', async () => {
    const tensors = await allTensors(repoFrom('tiny-qwen3'));
    const without = tensors.filter((t) => t.name !== 'model.layers.1.mlp.down_proj.weight');
    await expect(loadModelFiles(repoFrom('tiny-qwen3', { 'model.safetensors': writeSafetensors(without) }))).rejects.toThrow(
      /missing tensor model\.layers\.1\.mlp\.down_proj\.weight/,
    );
    // q_proj is [heads * head_dim, hidden] = [128, 64]; a transposed copy must not pass.
    const reshaped = tensors.map((t) =>
      t.name === 'model.layers.0.self_attn.q_proj.weight' ? { ...t, shape: [t.shape[1], t.shape[0]] } : t,
    );
    await expect(loadModelFiles(repoFrom('tiny-qwen3', { 'model.safetensors': writeSafetensors(reshaped) }))).rejects.toThrow(
      'tensor model.layers.0.self_attn.q_proj.weight: shape [64, 128] expected [128, 64]',
    );
    const extra = [
      ...tensors,
      { name: 'model.layers.0.self_attn.o_proj.bias', dtype: 'f32' as const, shape: [64], data: new Uint8Array(256) },
    ];
    await expect(loadModelFiles(repoFrom('tiny-qwen3', { 'model.safetensors': writeSafetensors(extra) }))).rejects.toThrow(
      /unexpected tensor model\.layers\.0\.self_attn\.o_proj\.bias/,
    );
    // Re-type one weight as I32 by editing the header (same byte size as F32).
    const bytes = fileBytes('tiny-qwen3', 'model.safetensors');
    const n = Number(new DataView(bytes.buffer, bytes.byteOffset).getBigUint64(0, true));
    const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + n)));
    header['model.norm.weight'].dtype = 'I32';
    const json = new TextEncoder().encode(JSON.stringify(header).padEnd(n, ' '));
    const retyped = bytes.slice();
    retyped.set(json, 8);
    await expect(loadModelFiles(repoFrom('tiny-qwen3', { 'model.safetensors': retyped }))).rejects.toThrow(
      'model.safetensors: tensor model.norm.weight has dtype I32; Hearth loads weights only as F32, F16 or BF16',
    );
  });

  it('a tokenizer with more ids than the embedding has rows, unparsable JSON, a template that does not compile', async () => {
    const config = { ...configOf('tiny-chat'), vocab_size: 1000 };
    await expect(loadModelFiles(repoFrom('tiny-chat', { 'config.json': JSON.stringify(config) }))).rejects.toThrow(
      /tokenizer\.json's vocabulary has 4096 token ids but config\.json's vocab_size is 1000/,
    );
    await expect(loadModelFiles(repoFrom('tiny-chat', { 'generation_config.json': '{"eos_token_id": [2,' }))).rejects.toThrow(
      /generation_config\.json: not valid JSON/,
    );
    // A template that does not compile does not block loading (training and completions need
    // none); chat requests are refused with the reason, a per-request template still works.
    const broken = await loadModelFiles(repoFrom('tiny-chat', { 'chat_template.jinja': '{% if %}' }));
    expect(broken.chatTemplates.problem).toMatch(/chat template does not compile/);
    expect(() => broken.chatTemplates.forRequest()).toThrow(ChatTemplateError);
    expect(() => broken.chatTemplates.forRequest()).toThrow(/this model's chat template cannot be used: chat template does not compile/);
    expect(broken.chatTemplates.forRequest({ override: 'ok' }).render({ messages: [] })).toBe('ok');
  });

  it('a JSON or template file over its size cap, refused by its size before it is read (issue 26)', async () => {
    // Padding keeps each file valid: only its size is wrong.
    const pad = (n: number) => ' '.repeat(n);
    const config = JSON.stringify(configOf('tiny-chat')) + pad(1024 * 1024);
    await expect(loadModelFiles(repoFrom('tiny-chat', { 'config.json': config }))).rejects.toThrow(
      new RepositoryError(`config.json is ${config.length} bytes; Hearth reads at most 1 MiB of it`),
    );
    const template = '{{ messages[0].content }}' + pad(1024 * 1024);
    await expect(loadModelFiles(repoFrom('tiny-chat', { 'chat_template.jinja': template }))).rejects.toThrow(
      /^chat_template\.jinja is \d+ bytes; Hearth reads at most 1 MiB of it$/,
    );
    const tokenizerConfig = new TextDecoder().decode(fileBytes('tiny-chat', 'tokenizer_config.json')) + pad(16 * 1024 * 1024);
    await expect(loadModelFiles(repoFrom('tiny-chat', { 'tokenizer_config.json': tokenizerConfig }))).rejects.toThrow(
      /^tokenizer_config\.json is \d+ bytes; Hearth reads at most 16 MiB of it$/,
    );
  });

  it('says which files it parses once their bytes are in, and when it is done (issue 26)', async () => {
    const calls: (string | null)[] = [];
    await loadModelFiles(repoFrom('tiny-qwen3'), { parsing: async (files) => void calls.push(files) });
    expect(calls).toEqual([
      'config.json',
      null,
      'generation_config.json, tokenizer.json, tokenizer_config.json, chat_template.jinja',
      null,
    ]);
    calls.length = 0;
    // A refused file leaves the marker set: the caller clears it when it records the error.
    await expect(
      loadModelFiles(repoFrom('tiny-chat', { 'tokenizer.json': '{' }), { parsing: async (f) => void calls.push(f) }),
    ).rejects.toThrow(/tokenizer\.json: not valid JSON/);
    expect(calls).toEqual(['config.json', null, 'generation_config.json, tokenizer.json, tokenizer_config.json']);
  });

  it('errors are typed so callers can tell the kinds apart', async () => {
    await expect(loadModelFiles(repoFrom('tiny-chat', { 'config.json': null }))).rejects.toBeInstanceOf(RepositoryError);
  });
});

describe('over HTTP with a cache', () => {
  let server: FileServer | undefined;
  afterEach(() => server?.stop());

  it('downloads with progress, then loads again offline from the cache', async () => {
    server = await new FileServer().start();
    for (const name of readdirSync(folder('tiny-qwen3')))
      server.put(`/hearth/tiny-qwen3/resolve/main/${name}`, fileBytes('tiny-qwen3', name));
    const cache = new MemoryFileCache();
    const progress = new Set<string>();
    const online = await loadModelFiles(new UrlSource('hearth/tiny-qwen3', { hfBase: server.base, cache }), {
      onProgress: (p) => progress.add(p.file),
    });
    expect(progress).toEqual(
      new Set([
        'config.json',
        'generation_config.json',
        'tokenizer.json',
        'tokenizer_config.json',
        'chat_template.jinja',
        'model.safetensors',
      ]),
    );
    // Absent optional files were asked for and answered 404.
    expect(server.log.some((r) => r.path.endsWith('/model.safetensors.index.json'))).toBe(true);
    await server.stop();
    server = undefined;

    const offline = await loadModelFiles(new UrlSource('hearth/tiny-qwen3', { hfBase: 'http://127.0.0.1:9', cache, retries: 0 }));
    expect(offline.config).toEqual(online.config);
    const a = await SafetensorsFile.open((await cache.get('hearth/tiny-qwen3', 'model.safetensors'))!);
    expect(a.names.length).toBe(online.weights.length);
    let n = 0;
    for await (const t of offline.tensors()) n += t.data.byteLength;
    expect(n).toBe(online.weightBytes);
  });
});
