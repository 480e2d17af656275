/**
 * The endpoint list the API reference page shows: every /v1 route with a one-line summary, an
 * example body, and (where the SDK has a call for it) the `openai` package's equivalent. Data
 * only; README "Endpoints" is the full description.
 */

export interface EndpointDoc {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  path: string;
  summary: string;
  /** Example JSON body (POST/DELETE). */
  body?: unknown;
  /** Multipart form fields (uploads). */
  form?: Record<string, string>;
  /** The `openai` SDK call, `client` being `new OpenAI({...})`. */
  openai?: string;
  group: string;
}

const MODEL = '<model id>';

/** The endpoints by group, in the order the page shows them. */
const GROUPS: Record<string, Omit<EndpointDoc, 'group'>[]> = {
  Chat: [
    {
      method: 'POST',
      path: '/v1/chat/completions',
      summary: 'vLLM-compatible chat completions, JSON or streamed (stream: true).',
      body: { model: 'hearth/tiny-chat', messages: [{ role: 'user', content: 'What is 2 + 3?' }], max_tokens: 16 },
      openai: `await client.chat.completions.create({ model: 'hearth/tiny-chat', messages: [{ role: 'user', content: 'What is 2 + 3?' }], max_tokens: 16 })`,
    },
    {
      method: 'GET',
      path: '/v1/models',
      summary: 'Models chat completions can serve: base models and every checkpoint.',
      openai: 'await client.models.list()',
    },
  ],
  'Base models': [
    { method: 'GET', path: '/v1/preview/base-models', summary: 'Base models Hearth knows, with download status and progress.' },
    {
      method: 'POST',
      path: '/v1/preview/base-models',
      summary:
        'Download a base model from a Hugging Face repo (or a mirror), one GGUF file of a repo, or a URL, in the background (admin); quantization "q8_0" or "q4_k" loads a safetensors model quantized.',
      body: { source: { type: 'huggingface', repo: 'bartowski/SmolLM2-135M-Instruct-GGUF', file: 'SmolLM2-135M-Instruct-Q8_0.gguf' } },
    },
    { method: 'GET', path: '/v1/preview/base-models/{id}', summary: 'One base model (the id URL-encoded, e.g. org%2Fname).' },
    {
      method: 'POST',
      path: '/v1/preview/base-models/files',
      summary:
        'Add a base model from files (config.json, tokenizer, safetensors; or a .gguf file), multipart, with optional id and quantization fields (admin).',
      form: { file: '<files>' },
    },
    {
      method: 'DELETE',
      path: '/v1/preview/base-models/{id}',
      summary: "Remove a base model's cached weights (the id URL-encoded; admin).",
    },
  ],
  Models: [
    {
      method: 'POST',
      path: '/v1/preview/models',
      summary: 'Register a trainable model on a base model (step 0 checkpoint at once).',
      body: { entity: null, project: 'demo', name: 'my-model', base_model: 'hearth/tiny-chat', return_existing: true },
    },
    { method: 'GET', path: '/v1/preview/models', summary: 'List registered models (after, limit, order).' },
    { method: 'GET', path: `/v1/preview/models/${MODEL}`, summary: 'Read one model.' },
    { method: 'DELETE', path: `/v1/preview/models/${MODEL}`, summary: 'Delete a model with its checkpoints, logs, jobs and run.' },
    { method: 'GET', path: `/v1/preview/models/${MODEL}/checkpoints`, summary: 'Checkpoints with their metrics.' },
    { method: 'DELETE', path: `/v1/preview/models/${MODEL}/checkpoints`, summary: 'Delete checkpoints by step.', body: { steps: [1] } },
    {
      method: 'GET',
      path: `/v1/preview/models/${MODEL}/checkpoints/{step}/adapter`,
      summary: 'Download a checkpoint as a PEFT LoRA adapter (zip).',
    },
    {
      method: 'POST',
      path: '/v1/preview/models/import',
      summary: 'Import a PEFT adapter as a new model (multipart: project, name, base_model, files).',
      form: { project: 'demo', name: 'imported', base_model: 'hearth/tiny-chat', file: '<adapter files>' },
    },
  ],
  Runs: [
    {
      method: 'POST',
      path: `/v1/preview/models/${MODEL}/log`,
      summary: 'Log trajectory groups for a split; metrics join the run history.',
      body: {
        split: 'val',
        trajectory_groups: [{ trajectories: [{ messages_and_choices: [{ role: 'user', content: 'hi' }], reward: 1 }] }],
      },
    },
    { method: 'GET', path: `/v1/preview/models/${MODEL}/run`, summary: 'Metrics history by step and split.' },
    { method: 'GET', path: `/v1/preview/models/${MODEL}/trajectories`, summary: 'Logged trajectory groups (split, step, after, limit).' },
  ],
  Training: [
    {
      method: 'POST',
      path: '/v1/preview/training-jobs',
      summary: 'Start an RL job from trajectory groups.',
      body: { model_id: MODEL, trajectory_groups: [], experimental_config: { learning_rate: 1e-4 } },
    },
    {
      method: 'POST',
      path: '/v1/preview/sft-training-jobs',
      summary: 'Start an SFT job on JSONL chat data (an artifact URL or data: URL).',
      body: { model_id: MODEL, training_data_url: '/v1/preview/artifacts/<artifact id>', config: { batch_size: 2, learning_rate: 1e-4 } },
    },
    { method: 'GET', path: '/v1/preview/training-jobs', summary: 'Training jobs, newest first (model_id, limit, after, order).' },
    { method: 'GET', path: '/v1/preview/training-jobs/{job id}', summary: 'One job: status and times.' },
    { method: 'GET', path: '/v1/preview/training-jobs/{job id}/events', summary: 'Job events in order (after, limit).' },
    {
      method: 'POST',
      path: '/v1/preview/artifacts',
      summary: 'Upload SFT data (multipart: model_id, file).',
      form: { model_id: MODEL, file: '<train.jsonl>' },
    },
    { method: 'GET', path: '/v1/preview/artifacts/{artifact id}', summary: 'Read an artifact.' },
  ],
  Hearth: [
    {
      method: 'POST',
      path: '/v1/preview/api-keys',
      summary: 'Create a key for a new principal (admin); the secret is returned once.',
      body: { name: 'my-agent' },
    },
    { method: 'GET', path: '/v1/preview/api-keys', summary: 'List keys without secrets (admin).' },
    { method: 'DELETE', path: '/v1/preview/api-keys/{key id}', summary: 'Revoke a key (admin).' },
    {
      method: 'DELETE',
      path: '/v1/preview/api-keys/principals/{principal id}',
      summary: 'Delete a principal with its keys and everything it owns (admin).',
    },
    {
      method: 'GET',
      path: '/v1/preview/engine',
      summary: 'The engine: state, GPU adapter, features, limits, the backend serving chat (WebGPU or CPU) and what it refuses, jobs.',
    },
    {
      method: 'PATCH',
      path: '/v1/preview/engine',
      summary:
        'Choose the backend: "auto" (WebGPU when there is an adapter, else the CPU) or "cpu"; applies at the next engine start (admin).',
      body: { backend: 'cpu' },
    },
    { method: 'GET', path: '/v1/preview/engine/events', summary: 'The engine status as Server-Sent Events.' },
    { method: 'GET', path: '/v1/preview/storage', summary: 'Storage used per kind and the browser quota.' },
    { method: 'GET', path: '/v1/preview/settings', summary: 'Whether a Hugging Face token is set (never the token), and the mirror.' },
    {
      method: 'PATCH',
      path: '/v1/preview/settings',
      summary: 'Set or remove the Hugging Face token (sent only to the hub and the mirror) and the mirror (admin).',
      body: { huggingface_token: 'hf_…', huggingface_mirror: null },
    },
  ],
};

export const ENDPOINTS: EndpointDoc[] = Object.entries(GROUPS).flatMap(([group, list]) => list.map((e) => ({ group, ...e })));

/** A `fetch` call for an endpoint, runnable in any page of this origin. */
export function fetchExample(e: EndpointDoc, origin: string): string {
  const url = `${origin}${e.path}`;
  if (e.form) {
    const lines = Object.entries(e.form).map(([k, v]) => `form.append('${k}', ${v.startsWith('<') ? `/* ${v} */ file` : `'${v}'`});`);
    return [
      `const form = new FormData();`,
      ...lines,
      `const res = await fetch('${url}', {`,
      `  method: 'POST',`,
      `  headers: { Authorization: \`Bearer \${key}\` },`,
      `  body: form,`,
      `});`,
      `console.log(await res.json());`,
    ].join('\n');
  }
  const body = e.body === undefined ? '' : `\n  body: JSON.stringify(${JSON.stringify(e.body)}),`;
  const type = e.body === undefined ? '' : `, 'Content-Type': 'application/json'`;
  return `const res = await fetch('${url}', {\n  method: '${e.method}',\n  headers: { Authorization: \`Bearer \${key}\`${type} },${body}\n});\nconsole.log(await res.json());`;
}

export function openaiExample(e: EndpointDoc, origin: string): string | undefined {
  if (!e.openai) return undefined;
  return `import OpenAI from 'openai';\nconst client = new OpenAI({ baseURL: '${origin}/v1', apiKey: key, dangerouslyAllowBrowser: true });\nconsole.log(${e.openai});`;
}
