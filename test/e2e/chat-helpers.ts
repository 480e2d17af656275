/**
 * Helpers shared by the chat completion e2e files: run the official `openai` SDK inside a page
 * (through the Service Worker to the engine worker) and bring the answer back as data, either
 * the whole completion, or every streamed chunk and the text they add up to. Errors come back as
 * `{ ok: false, status, message }` instead of throwing, so a test can assert on them.
 *
 * Not here: starting the app (harness.ts), the assertions (the test files).
 */
import type { Page } from 'playwright-core';

export const MODEL = 'hearth/tiny-chat';

/** A one-digit addition question in the demo's format (src/demo/addition.ts). */
export const ASK = [{ role: 'user', content: 'What is 3 + 4?' }];

export interface ChatError {
  ok: false;
  status?: number;
  name: string;
  message: string;
  param?: string | null;
}

export type ChatOutcome = { ok: true; completion: any } | ChatError;

export interface StreamOutcome {
  ok: boolean;
  chunks: any[];
  /** Each choice's content deltas joined, by index. */
  texts: string[];
  error?: ChatError;
}

/** `client.chat.completions.create(body)` in the page (stream: false). */
export async function complete(page: Page, key: string, body: Record<string, unknown>): Promise<ChatOutcome> {
  return page.evaluate(
    async ({ key, body }) => {
      const OpenAI = (globalThis as any).OpenAI;
      const client = new OpenAI({
        baseURL: `${location.origin}/v1`,
        apiKey: key,
        dangerouslyAllowBrowser: true,
        maxRetries: 0,
        timeout: 600_000,
      });
      try {
        return { ok: true as const, completion: await client.chat.completions.create(body) };
      } catch (err: any) {
        return {
          ok: false as const,
          status: err.status,
          name: err.constructor.name,
          message: err.error?.message ?? err.message,
          param: err.error?.param,
        };
      }
    },
    { key, body },
  );
}

/** The same request streamed: every chunk, and the content of each choice put back together. */
export async function stream(page: Page, key: string, body: Record<string, unknown>): Promise<StreamOutcome> {
  return page.evaluate(
    async ({ key, body }) => {
      const OpenAI = (globalThis as any).OpenAI;
      const client = new OpenAI({
        baseURL: `${location.origin}/v1`,
        apiKey: key,
        dangerouslyAllowBrowser: true,
        maxRetries: 0,
        timeout: 600_000,
      });
      const chunks: any[] = [];
      const texts: string[] = [];
      try {
        const s = await client.chat.completions.create({ ...body, stream: true });
        for await (const chunk of s) {
          chunks.push(chunk);
          for (const c of chunk.choices ?? []) texts[c.index] = (texts[c.index] ?? '') + (c.delta?.content ?? '');
        }
        return { ok: true, chunks, texts };
      } catch (err: any) {
        const error = { ok: false as const, status: err.status, name: err.constructor.name, message: err.error?.message ?? err.message };
        return { ok: false, chunks, texts, error };
      }
    },
    { key, body },
  );
}

/** A completion that must succeed: its value, or a thrown error that says what went wrong. */
export async function ok(page: Page, key: string, body: Record<string, unknown>): Promise<any> {
  const out = await complete(page, key, body);
  if (!out.ok) throw new Error(`chat completion failed (${out.status} ${out.name}): ${out.message}\nrequest: ${JSON.stringify(body)}`);
  return out.completion;
}
