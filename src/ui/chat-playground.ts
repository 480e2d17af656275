/**
 * `<hearth-chat-playground>`: chat with a base model or any checkpoint of your models. Pick the
 * model (GET /v1/models), set the main sampling controls (temperature, top_p, top_k, max tokens,
 * seed) and a system prompt, and watch the reply stream in token by token; Stop aborts it (which
 * frees its batch slot). With "Show token logprobs" the reply is shown token by token with each
 * token's probability and top alternatives. A badge says which backend answers (WebGPU, or CPU:
 * llama.cpp in WebAssembly); checkpoints, which the CPU backend cannot apply, are disabled there
 * with the reason.
 *
 * Not here: the SSE client (chat-client.ts), the token view (chat-tokens.ts).
 */
import { LitElement, css, html, nothing } from 'lit';
import { customElement, state } from 'lit/decorators.js';
import { Task } from '@lit/task';
import { apiGet } from './api-client';
import { streamChat, type ChatChunkLogprob } from './chat-client';
import { EngineFeed } from './engine-feed';
import './chat-tokens';

interface ModelCard {
  id: string;
  parent: string | null;
  max_model_len: number | null;
}

interface Turn {
  role: 'user' | 'assistant';
  content: string;
  /** Assistant turns streamed with logprobs on. */
  tokens?: ChatChunkLogprob[];
  finish?: string;
  usage?: { prompt_tokens: number; completion_tokens: number };
}

@customElement('hearth-chat-playground')
export class HearthChatPlayground extends LitElement {
  static override styles = css`
    :host {
      display: grid;
      grid-template-columns: minmax(0, 1fr) 15rem;
      gap: 1.25rem;
    }
    .log {
      display: flex;
      flex-direction: column;
      gap: 0.75rem;
      min-height: 12rem;
    }
    .turn {
      padding: 0.6rem 0.8rem;
      border-radius: 0.5rem;
      background: var(--hearth-surface, #fff);
      border: 1px solid var(--hearth-border, #e6dccd);
    }
    /* Only the text keeps its line breaks: the template's own whitespace around the reply and
       its meta line would otherwise show as blank lines. */
    .turn.user,
    [data-field='reply'] {
      white-space: pre-wrap;
    }
    .turn.user {
      background: var(--hearth-accent-soft, #efe4d6);
      align-self: flex-end;
      max-width: 85%;
    }
    .meta {
      font-size: 0.75rem;
      color: var(--hearth-muted, #6b5d4f);
      margin-top: 0.35rem;
    }
    form.compose {
      display: flex;
      gap: 0.5rem;
      margin-top: 0.75rem;
    }
    textarea {
      flex: 1;
      font: inherit;
      padding: 0.5rem;
      border-radius: 0.35rem;
      border: 1px solid var(--hearth-border, #c9b9a3);
      background: var(--hearth-bg, #fff);
      color: inherit;
      resize: vertical;
    }
    aside label {
      display: grid;
      gap: 0.2rem;
      margin-bottom: 0.6rem;
      font-size: 0.85rem;
    }
    aside label.check {
      display: flex;
      gap: 0.4rem;
      align-items: center;
    }
    input,
    select {
      font: inherit;
      background: var(--hearth-bg, #fff);
      color: inherit;
      border: 1px solid var(--hearth-border, #c9b9a3);
      border-radius: 0.3rem;
      padding: 0.25rem 0.4rem;
    }
    aside input:not([type='checkbox']),
    aside select,
    aside textarea {
      width: 100%;
      box-sizing: border-box;
    }
    .hint {
      color: var(--hearth-muted, #6b5d4f);
    }
    .backend-badge {
      display: inline-block;
      margin-bottom: 0.6rem;
      padding: 0.05rem 0.5rem;
      border-radius: 0.6rem;
      font-size: 0.8rem;
      border: 1px solid var(--hearth-border, #c9b9a3);
      background: var(--hearth-surface-2, #fff);
    }
    button {
      padding: 0.4rem 0.9rem;
      font: inherit;
      border: 1px solid var(--hearth-border, #2b2118);
      border-radius: 0.35rem;
      background: var(--hearth-surface-2, #fff);
      color: inherit;
      cursor: pointer;
    }
    button.primary {
      background: var(--hearth-accent, #2b2118);
      border-color: var(--hearth-accent, #2b2118);
      color: var(--hearth-accent-fg, #fbeedd);
    }
    .error {
      padding: 0.6rem;
      border-radius: 0.35rem;
      background: var(--hearth-danger-bg, #fde8d7);
    }
  `;

  @state() private _model = '';
  @state() private _system = '';
  @state() private _draft = '';
  @state() private _turns: Turn[] = [];
  @state() private _temperature = '';
  @state() private _topP = '';
  @state() private _topK = '';
  @state() private _maxTokens = '256';
  @state() private _seed = '';
  @state() private _showLogprobs = false;
  @state() private _error = '';
  @state() private _running: AbortController | null = null;

  private readonly _engine = new EngineFeed(this);
  private readonly _models = new Task(this, {
    task: async (_args, { signal }) => (await apiGet<{ data: ModelCard[] }>('/v1/models', signal)).data,
    args: () => [],
  });

  private _number(text: string, integer: boolean): number | undefined {
    if (text.trim() === '') return undefined;
    const n = Number(text);
    return Number.isFinite(n) ? (integer ? Math.trunc(n) : n) : undefined;
  }

  private _request(): Record<string, unknown> {
    const messages = [
      ...(this._system.trim() ? [{ role: 'system', content: this._system }] : []),
      ...this._turns.map((t) => ({ role: t.role, content: t.content })),
    ];
    const body: Record<string, unknown> = {
      model: this._model || undefined,
      messages,
      temperature: this._number(this._temperature, false),
      top_p: this._number(this._topP, false),
      top_k: this._number(this._topK, true),
      max_completion_tokens: this._number(this._maxTokens, true),
      seed: this._number(this._seed, true),
      stream_options: { include_usage: true },
      // Logprobs only when shown: the playground has no use for the training logprobs.
      logprobs: this._showLogprobs,
    };
    if (this._showLogprobs) body.top_logprobs = 5;
    return body;
  }

  private async _send(e: Event): Promise<void> {
    e.preventDefault();
    const text = this._draft.trim();
    if (!text || this._running) return;
    this._error = '';
    this._draft = '';
    this._turns = [...this._turns, { role: 'user', content: text }];
    const body = this._request();
    const reply: Turn = { role: 'assistant', content: '', tokens: this._showLogprobs ? [] : undefined };
    this._turns = [...this._turns, reply];
    const controller = new AbortController();
    this._running = controller;
    try {
      for await (const chunk of streamChat(body, controller.signal)) {
        const choice = chunk.choices[0];
        if (choice) {
          reply.content += choice.delta.content ?? '';
          // A new array, not a push: <hearth-chat-tokens> re-renders only when its property changes.
          if (reply.tokens && choice.logprobs) reply.tokens = [...reply.tokens, ...choice.logprobs.content];
          if (choice.finish_reason) reply.finish = choice.finish_reason;
        }
        if (chunk.usage && chunk.choices.length === 0) reply.usage = chunk.usage;
        this._turns = [...this._turns];
      }
    } catch (err) {
      if (controller.signal.aborted) reply.finish = 'stopped';
      else this._error = (err as Error).message;
      // A reply that never started is dropped with its question, so the user can edit and resend.
      if (!reply.content && !controller.signal.aborted) {
        this._turns = this._turns.slice(0, -2);
        this._draft = text;
      }
    } finally {
      this._running = null;
      this._turns = [...this._turns];
    }
  }

  private _stop(): void {
    this._running?.abort();
  }

  private _clear(): void {
    this._stop();
    this._turns = [];
    this._error = '';
  }

  private _renderTurn(t: Turn) {
    if (t.role === 'user') return html`<div class="turn user" data-role="user">${t.content}</div>`;
    return html`<div class="turn" data-role="assistant">
      ${t.tokens ? html`<hearth-chat-tokens .tokens=${t.tokens}></hearth-chat-tokens>` : html`<span data-field="reply">${t.content}</span>`}
      ${
        t.finish
          ? html`<div class="meta" data-field="finish">
            ${t.finish}${t.usage ? html` · ${t.usage.prompt_tokens} prompt + ${t.usage.completion_tokens} generated tokens` : nothing}
          </div>`
          : nothing
      }
    </div>`;
  }

  private _renderModels() {
    return this._models.render({
      pending: () => html`<select disabled><option>Loading models…</option></select>`,
      error: (e) => html`<p class="error" role="alert">Cannot list models: ${(e as Error).message}</p>`,
      complete: (models) => {
        // A checkpoint is a LoRA adapter: a backend that cannot apply one says why.
        const noAdapters = this._engine.status?.backend?.unsupported.find((u) => u.feature === 'checkpoints');
        return html`
          <select aria-label="Model" @change=${(e: Event) => (this._model = (e.target as HTMLSelectElement).value)}>
            <option value="" ?selected=${this._model === ''}>Default model</option>
            ${models.map((m) => {
              const off = m.parent !== null && noAdapters !== undefined;
              // One text node: an option's text keeps the whitespace around it.
              const label = `${m.id}${m.max_model_len ? ` (${m.max_model_len} ctx)` : ''}${off ? ' (needs WebGPU)' : ''}`;
              const title = off ? `Checkpoints ${noAdapters.reason}` : '';
              return html`<option value=${m.id} ?selected=${this._model === m.id} ?disabled=${off} title=${title}>${label}</option>`;
            })}
          </select>
        `;
      },
    });
  }

  /** Which backend answers: "CPU" or "WebGPU", with its description as the tooltip. */
  private _renderBackend() {
    const backend = this._engine.status?.backend;
    if (!backend) return nothing;
    return html`<span class="backend-badge" data-backend=${backend.kind} title=${backend.description}
      >${backend.kind === 'cpu' ? 'CPU · llama.cpp' : 'WebGPU'}</span
    >`;
  }

  override render() {
    const field = (label: string, value: string, set: (v: string) => void, placeholder: string) => html`
      <label>${label}<input inputmode="decimal" .value=${value} placeholder=${placeholder} @input=${(e: Event) => set((e.target as HTMLInputElement).value)} /></label>
    `;
    return html`
      <section aria-label="Conversation">
        <div class="log" role="log" aria-live="polite">
          ${this._turns.length ? this._turns.map((t) => this._renderTurn(t)) : html`<p class="hint">Send a message to start; replies stream in as they are generated.</p>`}
        </div>
        ${this._error ? html`<p class="error" role="alert">${this._error}</p>` : nothing}
        <form class="compose" @submit=${this._send}>
          <textarea
            aria-label="Message"
            rows="2"
            .value=${this._draft}
            @input=${(e: Event) => (this._draft = (e.target as HTMLTextAreaElement).value)}
            @keydown=${(e: KeyboardEvent) => {
              if (e.key === 'Enter' && !e.shiftKey) void this._send(e);
            }}
          ></textarea>
          ${
            this._running
              ? html`<button type="button" @click=${this._stop}>Stop</button>`
              : html`<button class="primary" type="submit">Send</button>`
          }
          <button type="button" @click=${this._clear}>Clear</button>
        </form>
      </section>
      <aside aria-label="Settings">
        ${this._renderBackend()}
        <label>Model ${this._renderModels()}</label>
        <label>System prompt<textarea rows="3" .value=${this._system} @input=${(e: Event) => (this._system = (e.target as HTMLTextAreaElement).value)}></textarea></label>
        ${field('Temperature', this._temperature, (v) => (this._temperature = v), 'model default')}
        ${field('Top p', this._topP, (v) => (this._topP = v), 'model default')}
        ${field('Top k', this._topK, (v) => (this._topK = v), 'model default')}
        ${field('Max tokens', this._maxTokens, (v) => (this._maxTokens = v), 'to the context end')}
        ${field('Seed', this._seed, (v) => (this._seed = v), 'random')}
        <label class="check"
          ><input type="checkbox" .checked=${this._showLogprobs} @change=${(e: Event) => (this._showLogprobs = (e.target as HTMLInputElement).checked)} />Show token logprobs</label
        >
      </aside>
    `;
  }
}

declare global {
  interface HTMLElementTagNameMap {
    'hearth-chat-playground': HearthChatPlayground;
  }
}
