/**
 * `<hearth-demo>`: the learning demo in one click (demo-runner.ts): the bundled tiny-chat model
 * learns to add numbers by RL through the public API, with the reward curve and the loss
 * growing live, then a side-by-side chat: the same question to the model before training and
 * after. The settings make a short run possible (tests use one round of two small groups).
 *
 * Not here: the loop itself (demo-runner.ts).
 */
import { LitElement, css, html, nothing, type ReactiveController } from 'lit';
import { customElement, state } from 'lit/decorators.js';
import { apiSend } from './api-client';
import { demoRun, FULL_DEMO, type DemoSettings } from './demo-runner';
import type { ChartSeries } from './line-chart';
import { shared } from './theme';
import './line-chart';

/** Re-renders the host on every change of the page's demo run, while connected. */
class DemoRunController implements ReactiveController {
  private readonly onChange = () => this.host.requestUpdate();
  constructor(private readonly host: LitElement) {
    host.addController(this);
  }
  hostConnected(): void {
    demoRun.addEventListener('change', this.onChange);
  }
  hostDisconnected(): void {
    demoRun.removeEventListener('change', this.onChange);
  }
}

interface Answer {
  label: string;
  model: string;
  text: string;
  error?: boolean;
}

@customElement('hearth-demo')
export class HearthDemo extends LitElement {
  static override styles = [
    shared,
    css`
      .answer {
        white-space: pre-wrap;
        font-size: 1.1rem;
        padding: 0.6rem;
        background: var(--hearth-surface-2);
        border-radius: 0.4rem;
        min-height: 1.5rem;
      }
    `,
  ];

  private readonly _run = new DemoRunController(this);
  @state() private _answers: Answer[] = [];
  @state() private _asking = false;

  private _start(e: SubmitEvent): void {
    e.preventDefault();
    const d = new FormData(e.target as HTMLFormElement);
    const n = (k: keyof DemoSettings) => Number(d.get(k) ?? FULL_DEMO[k]);
    this._answers = [];
    void demoRun.start({ rounds: n('rounds'), groups: n('groups'), groupSize: n('groupSize'), learningRate: n('learningRate') });
  }

  private async _ask(e: SubmitEvent): Promise<void> {
    e.preventDefault();
    const question = String(new FormData(e.target as HTMLFormElement).get('question') ?? '').trim();
    const sides = [
      { label: `Before (step ${demoRun.baseStep})`, model: demoRun.modelName(demoRun.baseStep) },
      { label: `After (step ${demoRun.finalStep})`, model: demoRun.modelName(demoRun.finalStep) },
    ];
    this._asking = true;
    this._answers = sides.map((s) => ({ ...s, text: '…' }));
    this._answers = await Promise.all(
      sides.map(async (s) => {
        try {
          const r = await apiSend<{ choices: { message: { content: string | null } }[] }>('POST', '/v1/chat/completions', {
            model: s.model,
            messages: [{ role: 'user', content: question }],
            temperature: 0,
            max_tokens: 16,
          });
          return { ...s, text: r.choices[0]?.message.content ?? '' };
        } catch (err) {
          return { ...s, text: (err as Error).message, error: true };
        }
      }),
    );
    this._asking = false;
  }

  private _charts() {
    const rewardSeries: ChartSeries[] = [
      { label: 'mean reward', points: demoRun.rounds.map((r) => [r.step, r.reward] as const) },
      { label: 'exact answers', points: demoRun.rounds.map((r) => [r.step, r.accuracy] as const) },
    ];
    const lossSeries: ChartSeries[] = [{ label: 'loss', points: demoRun.losses.map((l, i) => [i + 1, l] as const) }];
    return html`<div class="charts">
      <hearth-line-chart data-metric="reward" heading="Reward of the rollouts" .series=${rewardSeries} xLabel="checkpoint step"></hearth-line-chart>
      <hearth-line-chart data-metric="loss" heading="RL loss" .series=${lossSeries} xLabel="gradient step"></hearth-line-chart>
    </div>`;
  }

  override render() {
    const run = demoRun;
    return html`
      <h2>Demo: watch a model learn to add</h2>
      <section class="card" aria-labelledby="demo-how">
        <p id="demo-how">
          The bundled 4M-parameter <code>hearth/tiny-chat</code> answers questions like “What is 7 + 5?”. Each round samples answers
          through <code>/v1/chat/completions</code>, scores them in this page (1 for the exact sum, partial credit for a number with
          the right digits), logs them with <code>/log</code> and runs an RL job: the same calls an external trainer makes.
        </p>
        <form class="grid" @submit=${this._start} aria-label="Demo settings">
          <label>Rounds <input name="rounds" type="number" min="1" max="50" value=${FULL_DEMO.rounds} /></label>
          <label>Problems per round <input name="groups" type="number" min="1" max="64" value=${FULL_DEMO.groups} /></label>
          <label>Answers per problem <input name="groupSize" type="number" min="2" max="32" value=${FULL_DEMO.groupSize} /></label>
          <label>Learning rate <input name="learningRate" type="number" step="any" min="0" value=${FULL_DEMO.learningRate} /></label>
          <div class="row">
            <button class="primary" type="submit" ?disabled=${run.running}>Run the demo</button>
            ${run.running ? html`<button type="button" @click=${() => run.stop()}>Stop</button>` : nothing}
          </div>
        </form>
        <p role="status" data-field="demo-status" class=${run.phase === 'failed' ? 'error' : 'muted'}>${run.message || 'Not started.'}</p>
        ${run.model ? html`<p class="muted">Model <code>${run.modelName(run.finalStep)}</code> · <a href=${`#/runs/${run.model.id}`}>run history</a></p>` : nothing}
      </section>
      ${this._charts()}
      ${
        run.phase === 'done' || (run.model && !run.running && run.finalStep > run.baseStep)
          ? html`<section class="card" aria-labelledby="compare" style="margin-top:1rem">
            <h3 id="compare">Before and after</h3>
            <form class="row" @submit=${this._ask}>
              <label style="flex:1">Question <input name="question" value="What is 3 + 4?" required /></label>
              <button class="primary" type="submit" ?disabled=${this._asking}>Ask both</button>
            </form>
            <div class="tiles" style="--tile-min:14rem;margin-top:0.75rem">
              ${this._answers.map(
                (a) => html`<div data-side=${a.label.startsWith('Before') ? 'before' : 'after'}>
                  <h4>${a.label}</h4>
                  <div class=${a.error ? 'answer error' : 'answer'}>${a.text}</div>
                </div>`,
              )}
            </div>
          </section>`
          : nothing
      }
    `;
  }
}

declare global {
  interface HTMLElementTagNameMap {
    'hearth-demo': HearthDemo;
  }
}
