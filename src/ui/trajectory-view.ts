/**
 * `<hearth-trajectory>`: one logged trajectory as a conversation: each message or sampled
 * choice with its role, text, tool calls (name and arguments) and tool results, then its reward
 * and metrics. Everything the user or the model wrote is bound as text, never parsed as HTML.
 *
 * Not here: fetching (runs-view.ts).
 */
import { LitElement, css, html, nothing } from 'lit';
import { customElement, property } from 'lit/decorators.js';
import { formatMetric } from './format';
import { shared } from './theme';
import type { MessageLike, ToolCall, Trajectory } from './types';

/** The text of a message's content: a string, or the text parts of a content array. */
export function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((p) => (typeof p === 'object' && p && 'text' in p ? String((p as { text: unknown }).text) : JSON.stringify(p)))
      .join('\n');
  }
  return content === null || content === undefined ? '' : JSON.stringify(content);
}

interface Turn {
  role: string;
  text: string;
  toolCalls: ToolCall[];
  toolCallId?: string | null;
  sampled: boolean;
  finish?: string;
}

function turnOf(m: MessageLike): Turn {
  if (m.message) {
    return {
      role: 'assistant',
      text: contentText(m.message.content ?? m.message.refusal ?? ''),
      toolCalls: m.message.tool_calls ?? [],
      sampled: true,
      finish: m.finish_reason,
    };
  }
  return {
    role: m.role ?? 'unknown',
    text: contentText(m.content),
    toolCalls: m.tool_calls ?? [],
    toolCallId: m.tool_call_id,
    sampled: false,
  };
}

@customElement('hearth-trajectory')
export class HearthTrajectory extends LitElement {
  static override styles = [
    shared,
    css`
      :host {
        display: block;
        border: 1px solid var(--hearth-border);
        border-radius: 0.5rem;
        padding: 0.6rem;
        background: var(--hearth-surface);
      }
      .turn {
        margin: 0.35rem 0;
        padding: 0.45rem 0.6rem;
        border-radius: 0.45rem;
        background: var(--hearth-surface-2);
      }
      .turn.assistant {
        background: var(--hearth-accent-soft);
      }
      .role {
        font-size: 0.75rem;
        font-weight: 700;
        text-transform: uppercase;
        color: var(--hearth-muted);
      }
      .text {
        white-space: pre-wrap;
        word-break: break-word;
      }
      .call {
        margin-top: 0.3rem;
        font-family: var(--hearth-mono);
        font-size: 0.8rem;
        white-space: pre-wrap;
        word-break: break-word;
      }
      .foot {
        display: flex;
        flex-wrap: wrap;
        gap: 0.25rem 0.9rem;
        font-size: 0.85rem;
        margin-top: 0.4rem;
      }
    `,
  ];

  @property({ attribute: false }) trajectory!: Trajectory;

  override render() {
    const t = this.trajectory;
    return html`
      ${t.messages_and_choices.map(turnOf).map(
        (turn) => html`<div class="turn ${turn.role}" data-role=${turn.role}>
          <div class="role">${turn.role}${turn.sampled ? ' (sampled)' : ''}${turn.toolCallId ? ` · result of ${turn.toolCallId}` : ''}${turn.finish ? ` · ${turn.finish}` : ''}</div>
          ${turn.text ? html`<div class="text">${turn.text}</div>` : nothing}
          ${turn.toolCalls.map((c) => html`<div class="call" data-field="tool-call">→ ${c.function.name}(${c.function.arguments}) <span class="muted">${c.id}</span></div>`)}
        </div>`,
      )}
      <div class="foot">
        <span data-field="reward"><strong>reward</strong> ${formatMetric(t.reward)}</span>
        ${Object.entries(t.metrics ?? {}).map(([k, v]) => html`<span><span class="muted">${k}</span> ${formatMetric(v)}</span>`)}
      </div>
    `;
  }
}

declare global {
  interface HTMLElementTagNameMap {
    'hearth-trajectory': HearthTrajectory;
  }
}
