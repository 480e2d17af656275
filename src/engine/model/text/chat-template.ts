/**
 * Chat templates: render a conversation into the prompt text exactly as transformers'
 * `apply_chat_template` does when vLLM calls it, over @huggingface/jinja (Jinja with trim_blocks
 * and lstrip_blocks, `raise_exception` and `strftime_now` as in transformers).
 *
 * What happens before the template sees the messages (vLLM `parse_chat_messages`): content given as
 * a list of parts becomes their texts joined by "\n", unless the template loops over content parts
 * (chat-content-format.ts: Gemma 3's), which then gets the list of text parts ({type: "text", text})
 * as vLLM and transformers hand it over; null content becomes "";
 * assistant tool-call `arguments` given as a JSON string are parsed to an object.
 * Template variables (transformers): messages, tools, documents, add_generation_prompt, the special
 * token strings (bos_token, eos_token, pad_token, unk_token) and every chat_template_kwargs entry
 * (e.g. enable_thinking). continue_final_message leaves the last message open: the rendered text is
 * cut right after that message's content.
 * Not here: tokenizing the prompt (tokenizer.ts), request validation (the chat service).
 */
import { Template } from '@huggingface/jinja';
import { detectContentFormat, type ContentFormat } from './chat-content-format';
import { renderWithBudget, TemplateBudgetError } from './template-budget';

/**
 * The template could not be compiled or rendered, or the conversation does not fit it.
 * `overBudget`: it ran past its budget (template-budget.ts) rather than failing on this input.
 */
export class ChatTemplateError extends Error {
  constructor(
    message: string,
    readonly overBudget = false,
  ) {
    super(message);
    this.name = 'ChatTemplateError';
  }
}

/** Characters of template source compiled (the largest published chat templates are under 64 KiB). */
export const MAX_TEMPLATE_CHARS = 256 * 1024;

/**
 * The longest run of whitespace compiled. @huggingface/jinja's preprocess matches
 * `/(\s*){%(-?)\s*(?:end)?generation.../` over the source, which backtracks through a whitespace
 * run from each of its characters: quadratic in the run (a template of 250,000 spaces took 19 s
 * to compile, issue 26). Runs up to this length cost at most this many steps per character of
 * source (a few tens of ms for the longest source); published templates have runs under 40.
 */
export const MAX_TEMPLATE_WHITESPACE_RUN = 512;

/** JavaScript's `\s` (what the library's pattern matches), by code unit. */
function isJsWhitespace(c: number): boolean {
  return (
    (c >= 0x09 && c <= 0x0d) ||
    c === 0x20 ||
    c === 0xa0 ||
    c === 0x1680 ||
    (c >= 0x2000 && c <= 0x200a) ||
    c === 0x2028 ||
    c === 0x2029 ||
    c === 0x202f ||
    c === 0x205f ||
    c === 0x3000 ||
    c === 0xfeff
  );
}

/** The longest run of whitespace in `source`, and where it starts. */
function longestWhitespaceRun(source: string): { length: number; at: number } {
  let best = { length: 0, at: 0 };
  let start = -1;
  for (let i = 0; i <= source.length; i++) {
    if (i < source.length && isJsWhitespace(source.charCodeAt(i))) {
      if (start < 0) start = i;
    } else if (start >= 0) {
      if (i - start > best.length) best = { length: i - start, at: start };
      start = -1;
    }
  }
  return best;
}

export interface ChatContentPart {
  type: string;
  text?: string;
  refusal?: string;
  [key: string]: unknown;
}

export interface ChatToolCall {
  id?: string;
  type?: string;
  function: { name: string; arguments: string | Record<string, unknown> };
  [key: string]: unknown;
}

export interface ChatMessage {
  role: string;
  content?: string | ChatContentPart[] | null;
  name?: string;
  tool_calls?: ChatToolCall[] | null;
  tool_call_id?: string;
  reasoning_content?: string | null;
  [key: string]: unknown;
}

export interface RenderChatOptions {
  messages: readonly ChatMessage[];
  /** OpenAI tool definitions ({type: "function", function: {...}}), passed as given. */
  tools?: readonly unknown[] | null;
  /** RAG documents, e.g. {title, text}; passed as given. */
  documents?: readonly unknown[] | null;
  addGenerationPrompt?: boolean;
  continueFinalMessage?: boolean;
  /** Extra template variables (vLLM `chat_template_kwargs`), e.g. {enable_thinking: false}. */
  kwargs?: Readonly<Record<string, unknown>>;
}

/** The special-token strings a template may use; absent ones stay undefined in the template. */
export interface SpecialTokenStrings {
  bos_token?: string | null;
  eos_token?: string | null;
  pad_token?: string | null;
  unk_token?: string | null;
}

export class ChatTemplate {
  private readonly template: Template;
  /** How messages' content reaches the template (vLLM's "auto" content format). */
  readonly contentFormat: ContentFormat;

  /** Compiles the Jinja source; a syntax error is a ChatTemplateError. */
  constructor(
    readonly source: string,
    private readonly specialTokens: SpecialTokenStrings = {},
  ) {
    if (source.length > MAX_TEMPLATE_CHARS) {
      throw new ChatTemplateError(`chat template is ${source.length} characters long, over the limit of ${MAX_TEMPLATE_CHARS}`, true);
    }
    const run = longestWhitespaceRun(source);
    if (run.length > MAX_TEMPLATE_WHITESPACE_RUN) {
      throw new ChatTemplateError(
        `chat template has a run of ${run.length} whitespace characters at position ${run.at}, over the limit of ${MAX_TEMPLATE_WHITESPACE_RUN}`,
        true,
      );
    }
    try {
      this.template = new Template(source);
    } catch (e) {
      // @huggingface/jinja's parser reads past its last token (a TypeError) when the source ends inside a tag or block.
      const why = e instanceof TypeError ? 'it ends inside an unclosed tag or block' : (e as Error).message;
      throw new ChatTemplateError(`chat template does not compile: ${why}`);
    }
    this.contentFormat = detectContentFormat(this.template.parsed);
  }

  render(options: RenderChatOptions): string {
    const addGenerationPrompt = options.addGenerationPrompt ?? false;
    const continueFinal = options.continueFinalMessage ?? false;
    if (addGenerationPrompt && continueFinal) {
      throw new ChatTemplateError('Cannot set both `continue_final_message` and `add_generation_prompt` to True.');
    }
    const messages = options.messages.map((m, i) => prepareMessage(m, i, this.contentFormat));
    if (continueFinal && messages.length === 0) {
      throw new ChatTemplateError('continue_final_message is set but there are no messages');
    }
    const vars: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(this.specialTokens)) if (v != null) vars[k] = v;
    Object.assign(vars, options.kwargs ?? {}, {
      messages,
      tools: options.tools ?? null,
      documents: options.documents ?? null,
      add_generation_prompt: addGenerationPrompt,
    });
    let text: string;
    try {
      text = renderWithBudget(this.template, vars);
    } catch (e) {
      if (e instanceof TemplateBudgetError) throw new ChatTemplateError(`chat template exceeds its budget: ${e.message}`, true);
      throw new ChatTemplateError(`chat template failed: ${(e as Error).message}`);
    }
    return continueFinal ? cutAfterFinalMessage(text, contentText(messages[messages.length - 1].content, messages.length - 1)) : text;
  }
}

/** vLLM's message normalisation (see the header). Returns a new object; the input is untouched. */
function prepareMessage(message: ChatMessage, index: number, format: ContentFormat): ChatMessage {
  if (!message || typeof message.role !== 'string') {
    throw new ChatTemplateError(`messages[${index}] has no "role"`);
  }
  // A template that loops over content parts gets them as parts (each text or refusal part one text
  // part, as vLLM wraps them); string and null content reach every template as a string.
  const content =
    format === 'openai' && Array.isArray(message.content)
      ? contentTexts(message.content, index).map((text) => ({ type: 'text', text }))
      : contentText(message.content, index);
  const out: ChatMessage = { ...message, content };
  if (message.tool_calls != null) {
    out.tool_calls = message.tool_calls.map((call, j) => {
      const args = call.function?.arguments;
      if (typeof args !== 'string') return call;
      let parsed: unknown;
      try {
        parsed = JSON.parse(args);
      } catch {
        throw new ChatTemplateError(`messages[${index}].tool_calls[${j}].function.arguments is not valid JSON`);
      }
      return { ...call, function: { ...call.function, arguments: parsed as Record<string, unknown> } };
    });
  }
  return out;
}

function contentText(content: ChatMessage['content'], index: number): string {
  return content == null ? '' : contentTexts(content, index).join('\n');
}

/** The texts of a message's content: the string, or each text (or refusal) part's. */
function contentTexts(content: string | ChatContentPart[], index: number): string[] {
  if (typeof content === 'string') return [content];
  if (!Array.isArray(content)) throw new ChatTemplateError(`messages[${index}].content must be a string or a list of parts`);
  const texts: string[] = [];
  content.forEach((part, j) => {
    if (part?.type === 'text' && typeof part.text === 'string') texts.push(part.text);
    else if (part?.type === 'refusal' && typeof part.refusal === 'string') texts.push(part.refusal);
    else {
      throw new ChatTemplateError(
        `messages[${index}].content[${j}] has type ${JSON.stringify(part?.type)}; this model takes only text parts`,
      );
    }
  });
  return texts;
}

/**
 * transformers' continue_final_message: find the final message's (stripped) content in the
 * rendering, searching from the end, and cut right after it, keeping its leading whitespace
 * handling: when the template kept the content verbatim, cut after the full content, otherwise
 * after the stripped content (the template trimmed trailing whitespace).
 */
function cutAfterFinalMessage(rendered: string, finalContent: string): string {
  const stripped = finalContent.trim();
  const at = rendered.lastIndexOf(stripped);
  if (stripped.length === 0 || at < 0) {
    throw new ChatTemplateError(
      'continue_final_message is set but the final message does not appear in the chat after applying the chat template',
    );
  }
  const kept = finalContent.trimStart();
  if (rendered.slice(at, at + kept.length) === kept) return rendered.slice(0, at + kept.length);
  return rendered.slice(0, at + stripped.length);
}

const SAMPLE_CONVERSATION: ChatMessage[] = [
  { role: 'system', content: 'You are a helpful assistant.' },
  { role: 'user', content: 'What is 3 + 4?' },
  { role: 'assistant', content: '7' },
  { role: 'user', content: 'And 5 + 6?' },
];
const SAMPLE_TOOLS = [
  {
    type: 'function',
    function: {
      name: 'add',
      description: 'Adds two numbers.',
      parameters: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } } },
    },
  },
];

/**
 * A repository's chat templates plus per-request overrides (vLLM's `chat_template` field), compiled
 * once per distinct source.
 */
export class ChatTemplates {
  private readonly compiled = new Map<string, ChatTemplate>();

  /**
   * Why the repository's own template cannot be used (it does not compile here), or null. A model
   * with a broken template still loads: completions without a template, training, and requests
   * that bring their own `chat_template` work; chat requests get this message.
   */
  readonly problem: string | null = null;

  constructor(
    private readonly jinjaFile: string | null,
    private readonly configTemplate: unknown,
    readonly specialTokens: SpecialTokenStrings,
  ) {
    try {
      const source = selectTemplateSource(jinjaFile, configTemplate, false);
      if (source != null) this.compile(source);
    } catch (e) {
      if (e instanceof ChatTemplateError && e.overBudget) throw new ChatTemplateError(`${this.fileField}: ${e.message}`, true);
      this.problem = (e as Error).message;
    }
    if (!this.problem) this.checkBudget();
  }

  /** Where the repository's template comes from, for errors: the file and field. */
  private get fileField(): string {
    return this.jinjaFile != null ? 'chat_template.jinja' : 'tokenizer_config.json: "chat_template"';
  }

  /**
   * A template that runs past its budget on a plain conversation would fail every chat request:
   * such a repository is refused when it is loaded, naming the file. Other render errors are
   * the conversation's (a template may insist on roles the sample lacks) and are left to requests.
   */
  private checkBudget(): void {
    for (const tools of [null, SAMPLE_TOOLS]) {
      try {
        this.forRequest({ hasTools: tools != null }).render({ messages: SAMPLE_CONVERSATION, tools, addGenerationPrompt: true });
      } catch (e) {
        if (e instanceof ChatTemplateError && e.overBudget) throw new ChatTemplateError(`${this.fileField}: ${e.message}`, true);
      }
    }
  }

  /** Whether the repository ships a template at all (a base model may not). */
  get available(): boolean {
    return selectTemplateSource(this.jinjaFile, this.configTemplate, false) != null;
  }

  /** The template for one request: `override` when given, else the repository's own. */
  forRequest(options: { hasTools?: boolean; override?: string | null } = {}): ChatTemplate {
    if (options.override == null && this.problem) throw new ChatTemplateError(`this model's chat template cannot be used: ${this.problem}`);
    const source = options.override ?? selectTemplateSource(this.jinjaFile, this.configTemplate, options.hasTools ?? false);
    if (source == null) {
      throw new ChatTemplateError(
        'this model has no chat template (no chat_template.jinja and no "chat_template" in tokenizer_config.json); pass chat_template with the request',
      );
    }
    return this.compile(source);
  }

  private compile(source: string): ChatTemplate {
    let t = this.compiled.get(source);
    if (!t) {
      // Per-request overrides could grow this without bound; keep the most recent few.
      if (this.compiled.size >= 16) this.compiled.delete(this.compiled.keys().next().value!);
      t = new ChatTemplate(source, this.specialTokens);
      this.compiled.set(source, t);
    }
    return t;
  }
}

/**
 * The template(s) a repository ships: `chat_template.jinja` wins over tokenizer_config.json's
 * `chat_template` (transformers >= 4.47). tokenizer_config may hold a list of named templates:
 * with tools, "tool_use" is preferred when present, otherwise "default" (transformers'
 * `get_chat_template`).
 */
export function selectTemplateSource(jinjaFile: string | null, configTemplate: unknown, hasTools: boolean): string | null {
  if (jinjaFile != null) return jinjaFile;
  if (configTemplate == null) return null;
  if (typeof configTemplate === 'string') return configTemplate;
  if (Array.isArray(configTemplate)) {
    const named = new Map<string, string>();
    for (const t of configTemplate) {
      if (t && typeof t.name === 'string' && typeof t.template === 'string') named.set(t.name, t.template);
    }
    if (hasTools && named.has('tool_use')) return named.get('tool_use')!;
    if (named.has('default')) return named.get('default')!;
    throw new ChatTemplateError(`tokenizer_config.json: chat_template lists ${[...named.keys()].join(', ')} but no "default"`);
  }
  throw new ChatTemplateError('tokenizer_config.json: "chat_template" must be a string or a list of {name, template}');
}
