/**
 * An SFT job's examples turned into optimizer steps (docs/reference/art-compat.md §4): the examples are split
 * in file order into batches of `batch_size`, one optimizer step per batch, with the batch's
 * learning rate (one float for all, or the list's entry). Each example is rendered with the
 * model's chat template (and its tools); the targets are the assistant turns' tokens, their tool
 * calls and end token: every assistant turn, or only the last with `assistant_turns: "last"`.
 * An optional `loss_mask` (one 0/1 or boolean per message) picks the trained assistant turns
 * instead. Examples longer than the model's limit are dropped (as ART drops them); a batch left
 * empty is skipped, so `num_sequences` counts the steps that really train.
 *
 * Not here: reading and checking the JSONL (sft-data.ts), the loss (the engine: token-mean
 * cross-entropy over the step's targets).
 */
import type { ChatMessage } from '../../engine/model/text/chat-template';
import type { OptimizerConfig, TrainingSequence } from '../../engine/train/types';
import { tokenizeConversation, type ConversationTokenizer, type Turn } from './conversation-tokens';
import type { SftExample } from './sft-data';

/** ART / Unsloth SFT: AdamW with no weight decay, gradient clipping at 1.0. */
export const SFT_OPTIMIZER: OptimizerConfig = { beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0, maxGradNorm: 1.0 };

export class SftExampleError extends Error {
  override name = 'SftExampleError';
}

export interface SftStep {
  /** Index of the batch in the file (0-based). */
  batch: number;
  sequences: TrainingSequence[];
  learningRate: number;
  /** Examples of the batch dropped for length. */
  dropped: number;
}

export interface SftPlanOptions {
  tokenizer: ConversationTokenizer;
  maxLength: number;
  batchSize: number;
  learningRate: number | readonly number[];
  assistantTurns: 'all' | 'last';
}

/** Which messages of an example are trained: assistant turns, filtered by assistant_turns or loss_mask. */
function trainedTurns(example: SftExample, line: number, assistantTurns: 'all' | 'last'): boolean[] {
  const isAssistant = example.messages.map((m) => m.role === 'assistant');
  if (example.loss_mask !== undefined && example.loss_mask !== null) {
    const mask = example.loss_mask;
    if (!Array.isArray(mask) || mask.length !== example.messages.length || mask.some((v) => v !== 0 && v !== 1 && typeof v !== 'boolean')) {
      throw new SftExampleError(`example ${line}: loss_mask must hold one 0/1 (or boolean) per message (${example.messages.length}).`);
    }
    return isAssistant.map((a, i) => a && Boolean(mask[i]));
  }
  if (assistantTurns === 'last') {
    const last = isAssistant.lastIndexOf(true);
    return isAssistant.map((_, i) => i === last);
  }
  return isAssistant;
}

/** One example's token sequence; null when it has no target token. */
export function sftSequence(
  example: SftExample,
  line: number,
  t: ConversationTokenizer,
  assistantTurns: 'all' | 'last',
): TrainingSequence | null {
  const trained = trainedTurns(example, line, assistantTurns);
  const turns: Turn[] = example.messages.map((message, i) => ({
    kind: trained[i] ? 'target' : 'context',
    message: message as ChatMessage,
  }));
  const seq = tokenizeConversation(turns, example.tools ?? null, t);
  if (!seq) return null;
  return { tokens: Uint32Array.from(seq.tokens), trainable: Uint8Array.from(seq.trainable) };
}

export function planSftSteps(examples: readonly SftExample[], opts: SftPlanOptions): SftStep[] {
  const numBatches = Math.ceil(examples.length / opts.batchSize);
  const rates = opts.learningRate;
  if (typeof rates !== 'number' && rates.length !== numBatches) {
    throw new SftExampleError(`The learning-rate schedule has ${rates.length} entries for ${numBatches} batches.`);
  }
  const steps: SftStep[] = [];
  for (let b = 0; b < numBatches; b++) {
    const batch = examples.slice(b * opts.batchSize, (b + 1) * opts.batchSize);
    const sequences: TrainingSequence[] = [];
    let dropped = 0;
    batch.forEach((example, k) => {
      const seq = sftSequence(example, b * opts.batchSize + k + 1, opts.tokenizer, opts.assistantTurns);
      if (!seq) return;
      if (seq.tokens.length > opts.maxLength) dropped++;
      else sequences.push(seq);
    });
    if (sequences.length > 0) steps.push({ batch: b, sequences, learningRate: typeof rates === 'number' ? rates : rates[b], dropped });
  }
  return steps;
}
