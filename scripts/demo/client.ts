/**
 * The demo script's client of Hearth's public API: JSON calls with the bearer key, multipart
 * uploads, ART's event-polling loop (docs/reference/art-compat.md §1.8: `after` = the last gradient_step's id,
 * `training_started` re-read harmlessly, a terminal event ends it), and rollouts of the demo task
 * through /v1/chat/completions with logprobs as ART's client records them (Choices with
 * `token_id:<id>` logprob tokens).
 *
 * Not here: what is trained (scripts/train-demo.ts).
 */
import { messages, rolloutGroup, type AdditionProblem } from '../../src/demo/addition';

export class HearthClient {
  constructor(
    readonly url: string,
    private readonly key: string,
  ) {}

  async call(method: string, path: string, body?: unknown): Promise<any> {
    const send = () =>
      fetch(this.url + path, {
        method,
        headers: { Authorization: `Bearer ${this.key}`, ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    let res: Response;
    try {
      res = await send();
    } catch (err) {
      // ART retries reads (events, checkpoints) but never a POST: a POST is sent once.
      if (method !== 'GET') throw err;
      await new Promise((r) => setTimeout(r, 1000));
      res = await send();
    }
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${path}: HTTP ${res.status} ${text.slice(0, 500)}`);
    return text ? JSON.parse(text) : null;
  }

  async upload(path: string, fields: Record<string, string>, files: Record<string, string | Uint8Array>): Promise<any> {
    const form = new FormData();
    for (const [k, v] of Object.entries(fields)) form.append(k, v);
    for (const [name, body] of Object.entries(files)) form.append('file', new File([body as BlobPart], name));
    const res = await fetch(this.url + path, { method: 'POST', headers: { Authorization: `Bearer ${this.key}` }, body: form });
    if (!res.ok) throw new Error(`POST ${path}: HTTP ${res.status} ${await res.text()}`);
    return res.json();
  }

  async bytes(path: string): Promise<Uint8Array> {
    const res = await fetch(this.url + path, { headers: { Authorization: `Bearer ${this.key}` } });
    if (!res.ok) throw new Error(`GET ${path}: HTTP ${res.status}`);
    return new Uint8Array(await res.arrayBuffer());
  }

  /** ART's polling loop: returns the gradient_step metrics; throws on training_failed. */
  async waitForJob(jobId: string, onStep?: (metrics: Record<string, number>) => void): Promise<Record<string, number>[]> {
    let after: string | undefined;
    let started = false;
    const steps: Record<string, number>[] = [];
    for (;;) {
      await new Promise((r) => setTimeout(r, 500));
      for (;;) {
        const page = await this.call('GET', `/v1/preview/training-jobs/${jobId}/events${after ? `?after=${after}` : ''}`);
        for (const event of page.data) {
          if (event.type === 'training_started') {
            started = true;
            continue;
          }
          if (event.type === 'training_ended') return steps;
          if (event.type === 'training_failed') throw new Error(`Training job failed: ${event.data.error_message}`);
          if (event.type === 'gradient_step') {
            if (!started) throw new Error('gradient_step before training_started');
            steps.push(event.data);
            onStep?.(event.data);
          }
          after = event.id;
        }
        if (!page.has_more || page.data.length === 0) break;
      }
    }
  }

  /** One completion per problem at temperature 0: the answers the evaluation scores. */
  async answers(model: string, problems: readonly AdditionProblem[]): Promise<string[]> {
    return Promise.all(
      problems.map(async (p) => {
        const r = await this.call('POST', '/v1/chat/completions', { model, messages: messages(p), temperature: 0, max_tokens: 8 });
        return String(r.choices[0].message.content ?? '');
      }),
    );
  }

  /** `n` sampled completions of one problem as an ART TrajectoryGroup with rewards. */
  async rolloutGroup(model: string, p: AdditionProblem, n: number, temperature: number) {
    const r = await this.call('POST', '/v1/chat/completions', {
      model,
      messages: messages(p),
      n,
      temperature,
      max_tokens: 8,
      logprobs: true,
      return_tokens_as_token_ids: true,
    });
    return rolloutGroup(p, r.choices);
  }
}
