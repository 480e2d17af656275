/**
 * The learning demo run in the page, through the public API only, as OpenPipe ART runs it:
 * register a model on the bundled tiny-chat, then rounds of rollouts (n sampled answers per
 * addition problem through /v1/chat/completions with logprobs), rewards computed here
 * (src/demo/addition.ts), POST /log, an RL training job followed through its events, and the
 * next round on the new checkpoint. The run lives at module level, so leaving the Demo view
 * and coming back shows it still going. Listeners get a `change` event after every update.
 *
 * Not here: drawing (demo-view.ts), the task itself (src/demo).
 */
import { messages, problems, rolloutGroup, type AdditionProblem } from '../demo/addition';
import { apiGet, apiSend, type ListPage } from './api-client';
import type { Checkpoint, JobEvent, Model, TrainingJob } from './types';

export interface DemoSettings {
  rounds: number;
  /** Problems per round (one trajectory group each). */
  groups: number;
  /** Sampled answers per problem. */
  groupSize: number;
  learningRate: number;
}

export const FULL_DEMO: DemoSettings = { rounds: 6, groups: 8, groupSize: 6, learningRate: 1e-3 };

export interface RoundResult {
  /** The checkpoint step the rollouts sampled from. */
  step: number;
  reward: number;
  /** Fraction of exact answers. */
  accuracy: number;
}

export type DemoPhase = 'idle' | 'registering' | 'rollouts' | 'logging' | 'training' | 'done' | 'failed' | 'stopped';

const MAX_TOKENS = 8;
/** The bundled model was trained on one-digit sums (docs/training.md, scripts/train-demo.ts --max-digits 1). */
const DEMO_PROBLEMS = { maxDigits: 1 };

export class DemoRun extends EventTarget {
  phase: DemoPhase = 'idle';
  message = '';
  model: Model | undefined;
  rounds: RoundResult[] = [];
  /** Every gradient step's loss across the run's jobs. */
  losses: number[] = [];
  baseStep = 0;
  finalStep = 0;
  round = 0;
  settings: DemoSettings = FULL_DEMO;
  private abort = new AbortController();

  get running(): boolean {
    return !['idle', 'done', 'failed', 'stopped'].includes(this.phase);
  }

  stop(): void {
    this.abort.abort();
  }

  private set(phase: DemoPhase, message: string): void {
    this.phase = phase;
    this.message = message;
    this.dispatchEvent(new Event('change'));
  }

  modelName(step: number): string {
    const m = this.model!;
    return `${m.entity}/${m.project}/${m.name}:step${step}`;
  }

  async start(settings: DemoSettings): Promise<void> {
    this.abort = new AbortController();
    const signal = this.abort.signal;
    Object.assign(this, { settings, rounds: [], losses: [], round: 0, model: undefined, baseStep: 0, finalStep: 0 });
    try {
      this.set('registering', 'Registering a model on hearth/tiny-chat…');
      this.model = await apiSend<Model>('POST', '/v1/preview/models', {
        entity: null,
        project: 'demo',
        name: `addition-${new Date()
          .toISOString()
          .replace(/[^0-9]/g, '')
          .slice(0, 14)}`,
        base_model: 'hearth/tiny-chat',
        return_existing: false,
      });
      let step = await this.latestStep();
      this.baseStep = this.finalStep = step;
      for (let r = 0; r < settings.rounds; r++) {
        if (signal.aborted) return this.set('stopped', 'Stopped.');
        this.round = r + 1;
        this.set(
          'rollouts',
          `Round ${r + 1} of ${settings.rounds}: sampling ${settings.groups} × ${settings.groupSize} answers from step ${step}…`,
        );
        const batch = problems('train', settings.groups, 1000 * (r + 1) + (Date.now() % 997), DEMO_PROBLEMS);
        const groups = await Promise.all(batch.map((p) => this.rollout(step, p, settings.groupSize, signal)));
        const rewards = groups.flatMap((g) => g.trajectories.map((t) => t.reward));
        this.rounds = [...this.rounds, { step, reward: mean(rewards), accuracy: rewards.filter((x) => x === 1).length / rewards.length }];
        this.set('logging', `Round ${r + 1}: mean reward ${mean(rewards).toFixed(3)}; logging the trajectories…`);
        await apiSend('POST', `/v1/preview/models/${this.model.id}/log`, { split: 'train', trajectory_groups: groups }, signal);
        this.set('training', `Round ${r + 1}: RL step on ${rewards.length} trajectories…`);
        const job = await apiSend<TrainingJob>('POST', '/v1/preview/training-jobs', {
          model_id: this.model.id,
          trajectory_groups: groups,
          experimental_config: { learning_rate: settings.learningRate },
        });
        const trained = await this.follow(job.id, signal);
        step = await this.latestStep();
        if (trained === 0)
          this.set('training', `Round ${r + 1}: every answer of each problem got the same reward, so this step had nothing to learn from.`);
        this.finalStep = step;
      }
      this.set(
        'done',
        `Done: ${settings.rounds} RL round${settings.rounds === 1 ? '' : 's'}, from step ${this.baseStep} to step ${this.finalStep}.`,
      );
    } catch (err) {
      if (signal.aborted) return this.set('stopped', 'Stopped.');
      this.set('failed', (err as Error).message);
    }
  }

  private async latestStep(): Promise<number> {
    const page = await apiGet<ListPage<Checkpoint>>(`/v1/preview/models/${this.model!.id}/checkpoints?order=desc&limit=1`);
    return page.data[0]?.step ?? 0;
  }

  private async rollout(step: number, p: AdditionProblem, n: number, signal: AbortSignal) {
    const r = await apiSend<{ choices: { message: { content: string | null } }[] }>(
      'POST',
      '/v1/chat/completions',
      {
        model: this.modelName(step),
        messages: messages(p),
        n,
        temperature: 1,
        max_tokens: MAX_TOKENS,
        logprobs: true,
        return_tokens_as_token_ids: true,
      },
      signal,
    );
    return rolloutGroup(p, r.choices, (value) => ({ exact: value === 1 ? 1 : 0 }));
  }

  /** ART's event loop: `after` = the last event seen, until training_ended (returns the gradient steps) or training_failed. */
  private async follow(jobId: string, signal: AbortSignal): Promise<number> {
    let after = '';
    let steps = 0;
    for (;;) {
      if (signal.aborted) throw new Error('Stopped.');
      const page = await apiGet<ListPage<JobEvent>>(
        `/v1/preview/training-jobs/${jobId}/events?limit=100${after ? `&after=${after}` : ''}`,
        signal,
      );
      for (const e of page.data) {
        after = e.id;
        if (e.type === 'gradient_step') steps++;
        if (e.type === 'gradient_step' && typeof e.data.loss === 'number') {
          this.losses = [...this.losses, e.data.loss];
          this.dispatchEvent(new Event('change'));
        }
        if (e.type === 'training_failed') throw new Error(`The RL job failed: ${e.data.error_message}`);
        if (e.type === 'training_ended') return steps;
      }
      if (!page.has_more) await new Promise((r) => setTimeout(r, 700));
    }
  }
}

function mean(xs: number[]): number {
  return xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0;
}

/** The page's one demo run. */
export const demoRun = new DemoRun();
