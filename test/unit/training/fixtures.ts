// The bundled tiny-chat tokenizer and ChatML template (real files from public/), and the
// tiny-qwen3 ones (a template that inserts <think> blocks), for tokenisation tests.
import { readFileSync, existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { ChatTemplates } from '../../../src/engine/model/chat-template';
import { ModelTokenizer } from '../../../src/engine/model/tokenizer';
import type { ConversationTokenizer } from '../../../src/service/training/conversation-tokens';

const MODELS = fileURLToPath(new URL('../../../public/models/', import.meta.url));

export function bundledTokenizer(folder: 'tiny-chat' | 'tiny-qwen2' | 'tiny-qwen3'): ConversationTokenizer {
  const dir = `${MODELS}${folder}/`;
  const config = JSON.parse(readFileSync(dir + 'tokenizer_config.json', 'utf8'));
  const tokenizer = ModelTokenizer.fromJson(JSON.parse(readFileSync(dir + 'tokenizer.json', 'utf8')), config);
  const jinja = existsSync(dir + 'chat_template.jinja') ? readFileSync(dir + 'chat_template.jinja', 'utf8') : null;
  const templates = new ChatTemplates(jinja, config.chat_template ?? null, tokenizer.specialTokens);
  const eos = JSON.parse(readFileSync(dir + 'generation_config.json', 'utf8')).eos_token_id;
  return { tokenizer, template: templates.forRequest(), eosTokenIds: Array.isArray(eos) ? eos : [eos] };
}

/** Token ids of text (no special tokens added: templates write them). */
export function ids(t: ConversationTokenizer, text: string): number[] {
  return t.tokenizer.encode(text, { addSpecialTokens: false });
}

/** A Choice as a chat completion returns it, with logprob tokens written token_id:<id>. */
export function choice(t: ConversationTokenizer, text: string, opts: { logprob?: number; eos?: boolean; toolCalls?: unknown[] } = {}) {
  const tokens = [...ids(t, text), ...(opts.eos === false ? [] : [2])];
  return {
    finish_reason: 'stop',
    index: 0,
    message: { role: 'assistant', content: text, ...(opts.toolCalls ? { tool_calls: opts.toolCalls } : {}) },
    logprobs: { content: tokens.map((id, i) => ({ token: `token_id:${id}`, logprob: (opts.logprob ?? -0.5) - i * 0.01, bytes: [], top_logprobs: [] })) },
  };
}
