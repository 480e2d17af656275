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

export const ENDPOINTS: EndpointDoc[] = [
  {
    group: 'Chat',
    method: 'POST',
    path: '/v1/chat/completions',
    summary: 'vLLM-compatible chat completions, JSON or streamed (stream: true).',
    body: { model: 'hearth/tiny-chat', messages: [{ role: 'user', content: 'What is 2 + 3?' }], max_tokens: 16 },
    openai: `await client.chat.completions.create({ model: 'hearth/tiny-chat', messages: [{ role: 'user', content: 'What is 2 + 3?' }], max_tokens: 16 })`,
  },
  {
    group: 'Chat',
    method: 'GET',
    path: '/v1/models',
    summary: 'Models chat completions can serve: base models and every checkpoint.',
    openai: 'await client.models.list()',
  },
  {
    group: 'Base models',
    method: 'GET',
    path: '/v1/preview/base-models',
    summary: 'Base models Hearth knows, with download status and progress.',
  },
  {
    group: 'Base models',
    method: 'POST',
    path: '/v1/preview/base-models',
    summary:
      'Download a base model from a Hugging Face repo (or a mirror), one GGUF file of a repo, or a URL, in the background (admin); quantization "q8_0" or "q4_k" loads a safetensors model quantized.',
    body: { source: { type: 'huggingface', repo: 'bartowski/SmolLM2-135M-Instruct-GGUF', file: 'SmolLM2-135M-Instruct-Q8_0.gguf' } },
  },
  {
    group: 'Base models',
    method: 'GET',
    path: '/v1/preview/base-models/{id}',
    summary: 'One base model (the id URL-encoded, e.g. org%2Fname).',
  },
  {
    group: 'Base models',
    method: 'POST',
    path: '/v1/preview/base-models/files',
    summary:
      'Add a base model from files (config.json, tokenizer, safetensors; or a .gguf file), multipart, with optional id and quantization fields (admin).',
    form: { file: '<files>' },
  },
  {
    group: 'Base models',
    method: 'DELETE',
    path: '/v1/preview/base-models/{id}',
    summary: "Remove a base model's cached weights (the id URL-encoded; admin).",
  },
  {
    group: 'Models',
    method: 'POST',
    path: '/v1/preview/models',
    summary: 'Register a trainable model on a base model (step 0 checkpoint at once).',
    body: { entity: null, project: 'demo', name: 'my-model', base_model: 'hearth/tiny-chat', return_existing: true },
  },
  { group: 'Models', method: 'GET', path: '/v1/preview/models', summary: 'List registered models (after, limit, order).' },
  { group: 'Models', method: 'GET', path: `/v1/preview/models/${MODEL}`, summary: 'Read one model.' },
  {
    group: 'Models',
    method: 'DELETE',
    path: `/v1/preview/models/${MODEL}`,
    summary: 'Delete a model with its checkpoints, logs, jobs and run.',
  },
  { group: 'Models', method: 'GET', path: `/v1/preview/models/${MODEL}/checkpoints`, summary: 'Checkpoints with their metrics.' },
  {
    group: 'Models',
    method: 'DELETE',
    path: `/v1/preview/models/${MODEL}/checkpoints`,
    summary: 'Delete checkpoints by step.',
    body: { steps: [1] },
  },
  {
    group: 'Models',
    method: 'GET',
    path: `/v1/preview/models/${MODEL}/checkpoints/{step}/adapter`,
    summary: 'Download a checkpoint as a PEFT LoRA adapter (zip).',
  },
  {
    group: 'Models',
    method: 'POST',
    path: '/v1/preview/models/import',
    summary: 'Import a PEFT adapter as a new model (multipart: project, name, base_model, files).',
    form: { project: 'demo', name: 'imported', base_model: 'hearth/tiny-chat', file: '<adapter files>' },
  },
  {
    group: 'Runs',
    method: 'POST',
    path: `/v1/preview/models/${MODEL}/log`,
    summary: 'Log trajectory groups for a split; metrics join the run history.',
    body: { split: 'val', trajectory_groups: [{ trajectories: [{ messages_and_choices: [{ role: 'user', content: 'hi' }], reward: 1 }] }] },
  },
  { group: 'Runs', method: 'GET', path: `/v1/preview/models/${MODEL}/run`, summary: 'Metrics history by step and split.' },
  {
    group: 'Runs',
    method: 'GET',
    path: `/v1/preview/models/${MODEL}/trajectories`,
    summary: 'Logged trajectory groups (split, step, after, limit).',
  },
  {
    group: 'Training',
    method: 'POST',
    path: '/v1/preview/training-jobs',
    summary: 'Start an RL job from trajectory groups.',
    body: { model_id: MODEL, trajectory_groups: [], experimental_config: { learning_rate: 1e-4 } },
  },
  {
    group: 'Training',
    method: 'POST',
    path: '/v1/preview/sft-training-jobs',
    summary: 'Start an SFT job on JSONL chat data (an artifact URL or data: URL).',
    body: { model_id: MODEL, training_data_url: '/v1/preview/artifacts/<artifact id>', config: { batch_size: 2, learning_rate: 1e-4 } },
  },
  {
    group: 'Training',
    method: 'GET',
    path: '/v1/preview/training-jobs',
    summary: 'Training jobs, newest first (model_id, limit, after, order).',
  },
  { group: 'Training', method: 'GET', path: '/v1/preview/training-jobs/{job id}', summary: 'One job: status and times.' },
  { group: 'Training', method: 'GET', path: '/v1/preview/training-jobs/{job id}/events', summary: 'Job events in order (after, limit).' },
  {
    group: 'Training',
    method: 'POST',
    path: '/v1/preview/artifacts',
    summary: 'Upload SFT data (multipart: model_id, file).',
    form: { model_id: MODEL, file: '<train.jsonl>' },
  },
  { group: 'Training', method: 'GET', path: '/v1/preview/artifacts/{artifact id}', summary: 'Read an artifact.' },
  {
    group: 'Hearth',
    method: 'POST',
    path: '/v1/preview/api-keys',
    summary: 'Create a key for a new principal (admin); the secret is returned once.',
    body: { name: 'my-agent' },
  },
  { group: 'Hearth', method: 'GET', path: '/v1/preview/api-keys', summary: 'List keys without secrets (admin).' },
  { group: 'Hearth', method: 'DELETE', path: '/v1/preview/api-keys/{key id}', summary: 'Revoke a key (admin).' },
  {
    group: 'Hearth',
    method: 'DELETE',
    path: '/v1/preview/api-keys/principals/{principal id}',
    summary: 'Delete a principal with its keys and everything it owns (admin).',
  },
  {
    group: 'Hearth',
    method: 'GET',
    path: '/v1/preview/engine',
    summary: 'The engine: state, GPU adapter, features, limits, the backend serving chat (WebGPU or CPU) and what it refuses, jobs.',
  },
  {
    group: 'Hearth',
    method: 'PATCH',
    path: '/v1/preview/engine',
    summary:
      'Choose the backend: "auto" (WebGPU when there is an adapter, else the CPU) or "cpu"; applies at the next engine start (admin).',
    body: { backend: 'cpu' },
  },
  { group: 'Hearth', method: 'GET', path: '/v1/preview/engine/events', summary: 'The engine status as Server-Sent Events.' },
  { group: 'Hearth', method: 'GET', path: '/v1/preview/storage', summary: 'Storage used per kind and the browser quota.' },
  {
    group: 'Hearth',
    method: 'GET',
    path: '/v1/preview/settings',
    summary: 'Whether a Hugging Face token is set (never the token), and the mirror.',
  },
  {
    group: 'Hearth',
    method: 'PATCH',
    path: '/v1/preview/settings',
    summary: 'Set or remove the Hugging Face token (sent only to the hub and the mirror) and the mirror (admin).',
    body: { huggingface_token: 'hf_…', huggingface_mirror: null },
  },
];

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
