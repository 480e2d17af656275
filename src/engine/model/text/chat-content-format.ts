/**
 * Which form a chat template takes message content in, read off its syntax tree as vLLM does
 * (`_detect_content_format` in vllm/entrypoints/chat_utils.py, the "auto" setting):
 *   - 'openai' when the template loops over a message's content (`{% for item in message['content'] %}`,
 *     where `message` is a loop variable over `messages` or a variable assigned from it, slices and
 *     filters included): content given as parts reaches it as a list of parts. (vLLM also wraps a
 *     string into one text part; Hearth passes strings as transformers does, which such templates
 *     render alike, Gemma 3's and Mistral's among them);
 *   - 'string' otherwise: text parts joined by "\n".
 * Gemma 3's template is of the first kind, so content given as parts is concatenated by the template
 * itself, exactly as transformers' apply_chat_template renders it (issue 21).
 * Not here: rendering (chat-template.ts).
 */
import type { Template } from '@huggingface/jinja';

type Program = Template['parsed'];

export type ContentFormat = 'string' | 'openai';

type Node = { type: string; [key: string]: unknown };

const isNode = (x: unknown): x is Node => typeof x === 'object' && x !== null && typeof (x as Node).type === 'string';

/** Every node under `root` (root included), collected once with an explicit stack (templates nest deep). */
function allNodes(root: unknown): Node[] {
  const out: Node[] = [];
  const stack: unknown[] = [root];
  while (stack.length > 0) {
    const x = stack.pop();
    if (Array.isArray(x)) stack.push(...x);
    else if (x instanceof Map) for (const [k, v] of x) stack.push(k, v);
    else if (isNode(x)) {
      out.push(x);
      for (const [key, value] of Object.entries(x)) if (key !== 'type' && typeof value === 'object' && value !== null) stack.push(value);
    }
  }
  return out;
}

const isVar = (n: unknown, name: string) => isNode(n) && n.type === 'Identifier' && n.value === name;

/** `name[key]` or `name.key`. */
function isAttr(n: Node, name: string, key: string): boolean {
  if (n.type !== 'MemberExpression' || !isVar(n.object, name)) return false;
  const p = n.property as Node;
  return n.computed ? p.type === 'StringLiteral' && p.value === key : p.type === 'Identifier' && p.value === key;
}

/** vLLM's `_is_var_or_elems_access`: the variable (or its `key`), through filters, tests and slices. */
function isVarOrElems(n: unknown, name: string, key?: string): boolean {
  if (!isNode(n)) return false;
  if (n.type === 'FilterExpression' || n.type === 'TestExpression') return isVarOrElems(n.operand, name, key);
  if (n.type === 'MemberExpression' && n.computed && isNode(n.property) && n.property.type === 'SliceExpression') {
    return isVarOrElems(n.object, name, key);
  }
  return key !== undefined ? isAttr(n, name, key) : isVar(n, name);
}

/** `messages` and every variable assigned from it (or a slice or filter of it), transitively. */
function messagesVars(all: readonly Node[]): string[] {
  const names = ['messages'];
  for (let i = 0; i < names.length; i++) {
    for (const n of all) {
      if (n.type !== 'Set' || !isNode(n.assignee) || n.assignee.type !== 'Identifier') continue;
      const lhs = n.assignee.value as string;
      if (isVarOrElems(n.value, names[i]) && !names.includes(lhs)) names.push(lhs);
    }
  }
  return names;
}

/** The loop variables of `for x in <messages var>`. */
function messageLoopVars(all: readonly Node[]): string[] {
  const lists = messagesVars(all);
  const out: string[] = [];
  for (const n of all) {
    if (n.type !== 'For' || !isNode(n.loopvar) || n.loopvar.type !== 'Identifier') continue;
    if (lists.some((v) => isVarOrElems(n.iterable, v))) out.push(n.loopvar.value as string);
  }
  return out;
}

export function detectContentFormat(root: Program): ContentFormat {
  const all = allNodes(root);
  const messageVars = messageLoopVars(all);
  for (const n of all) {
    if (n.type === 'For' && messageVars.some((v) => isVarOrElems(n.iterable, v, 'content'))) return 'openai';
  }
  return 'string';
}
