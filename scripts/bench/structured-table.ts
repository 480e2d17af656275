/**
 * The structured-outputs section's tables (structured.ts measures): per-token constraint overhead by
 * model and batch, then jump-forward decoding's steps and speed.
 */
import type { StructuredBenchResult } from './structured';

export function structuredTable(results: StructuredBenchResult[]): string {
  const head = [
    'model',
    'layers',
    'vocab (tokenizer)',
    'batch',
    'free ms / step',
    'unpipelined ms / step',
    'JSON-schema ms / step',
    'of it in matchers (host)',
    'overhead ms / token',
    'overhead %',
    'matcher µs / token (CPU)',
    'compile ms (cache hit)',
  ];
  const rows = results.flatMap((r) =>
    r.decode.map((d) => [
      r.model,
      r.layers === r.totalLayers ? `${r.layers}` : `${r.layers} of ${r.totalLayers}`,
      `${r.vocabSize} (${r.tokenizerVocab})`,
      `${d.batch}`,
      d.freeStepMs.toFixed(2),
      d.unpipelinedStepMs.toFixed(2),
      d.constrainedStepMs.toFixed(2),
      d.matcherMsPerStep.toFixed(2),
      d.overheadMsPerToken.toFixed(2),
      `${((100 * d.overheadMsPerToken) / d.freeStepMs).toFixed(0)} %`,
      r.matcherUsPerToken.toFixed(1),
      `${r.compileMs.toFixed(0)} (${r.cacheHitMs.toFixed(2)})`,
    ]),
  );
  const jumpHead = [
    'model',
    'tokens per run',
    'steps / token, jump-forward',
    'steps / token, token by token',
    'tokens/s, jump-forward',
    'tokens/s, token by token',
  ];
  const jumpRows = results.map((r) => [
    r.model,
    `${r.jumpForward.tokens}`,
    r.jumpForward.stepsPerTokenOn.toFixed(2),
    r.jumpForward.stepsPerTokenOff.toFixed(2),
    r.jumpForward.tokensPerSecondOn.toFixed(1),
    r.jumpForward.tokensPerSecondOff.toFixed(1),
  ]);
  const table = (h: string[], rs: string[][]) =>
    [`| ${h.join(' | ')} |`, `|${h.map(() => '---').join('|')}|`, ...rs.map((r) => `| ${r.join(' | ')} |`)].join('\n');
  return `${table(head, rows)}\n\nJump-forward decoding on a schema with long fixed keys (one sequence, seeded, the same tokens both ways):\n\n${table(jumpHead, jumpRows)}`;
}
