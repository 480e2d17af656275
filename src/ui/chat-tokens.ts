/**
 * `<hearth-chat-tokens>`: a reply shown token by token, each token shaded by its probability,
 * with its logprob and the top alternatives on hover and focus (the logprobs the engine returned).
 *
 * Not here: the conversation (chat-playground.ts).
 */
import { LitElement, css, html } from 'lit';
import { customElement, property } from 'lit/decorators.js';
import type { ChatChunkLogprob } from './chat-client';

function percent(logprob: number): string {
  const p = Math.exp(logprob) * 100;
  return p >= 10 ? p.toFixed(0) + '%' : p.toPrecision(2) + '%';
}

@customElement('hearth-chat-tokens')
export class HearthChatTokens extends LitElement {
  static override styles = css`
    :host {
      display: block;
      white-space: pre-wrap;
      line-height: 1.7;
    }
    span {
      border-radius: 0.2rem;
      padding: 0.05rem 0;
      outline-offset: 1px;
    }
    span:focus {
      outline: 2px solid var(--hearth-accent, #d9822b);
    }
  `;

  /** The tokens of one reply, in order. */
  @property({ attribute: false }) tokens: ChatChunkLogprob[] = [];

  override render() {
    return this.tokens.map((t) => {
      const p = Math.exp(t.logprob);
      // Low probability -> warm; high -> faint.
      const shade = `rgba(217, 130, 43, ${(0.55 * (1 - p)).toFixed(3)})`;
      const alternatives = t.top_logprobs.map((a) => `${JSON.stringify(a.token)} ${percent(a.logprob)}`).join('\n');
      const title = `${JSON.stringify(t.token)}: logprob ${t.logprob.toFixed(4)} (${percent(t.logprob)})${alternatives ? `\n${alternatives}` : ''}`;
      return html`<span data-token tabindex="0" title=${title} style="background:${shade}">${t.token}</span>`;
    });
  }
}

declare global {
  interface HTMLElementTagNameMap {
    'hearth-chat-tokens': HearthChatTokens;
  }
}
