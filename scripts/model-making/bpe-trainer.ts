/**
 * Byte-level BPE training (Sennrich et al. 2016, as the `tokenizers` BpeTrainer does it): start
 * from the 256 byte symbols, count adjacent symbol pairs over the pre-tokenized corpus weighted by
 * word frequency, merge the most frequent pair into a new symbol, repeat until the vocabulary is
 * full or no pair occurs `minFrequency` times. Ties go to the pair whose ids are smallest, so the
 * result depends only on the corpus. Pair counts are updated incrementally: a merge touches only
 * the words that contain the pair.
 * Not here: pre-tokenization (the tokenizer library's own pre-tokenizer, see tokenizer-json.ts)
 * and writing tokenizer.json.
 */
import { BYTE_TO_CHAR } from '../../src/engine/model/text/byte-level';

export interface BpeResult {
  /** Token strings by id: specials, then the 256 byte symbols, then one per merge. */
  vocab: string[];
  /** Merges in rank order, as pairs of token strings. */
  merges: Array<[string, string]>;
}

export interface BpeOptions {
  /** Added tokens placed first (ids 0..n-1). */
  specialTokens: string[];
  vocabSize: number;
  minFrequency: number;
}

const KEY = 1 << 16; // pair key = left * KEY + right; ids stay below 2^16

/** `words`: byte-level pre-tokens (each char one byte symbol) with their corpus counts. */
export function trainBpe(words: ReadonlyMap<string, number>, options: BpeOptions): BpeResult {
  const vocab = [...options.specialTokens, ...BYTE_TO_CHAR];
  if (options.vocabSize >= KEY) throw new Error('vocabSize must stay below 65536');
  const byteId = new Map(BYTE_TO_CHAR.map((c, b) => [c, options.specialTokens.length + b]));

  // Sorted word list so iteration order (and thus tie-free bookkeeping) never depends on Map order.
  const entries = [...words.entries()].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  const symbols: number[][] = entries.map(([w]) =>
    Array.from(w).map((c) => {
      const id = byteId.get(c);
      if (id === undefined) throw new Error(`pre-token ${JSON.stringify(w)} is not byte-level`);
      return id;
    }),
  );
  const counts = entries.map(([, n]) => n);

  const pairCount = new Map<number, number>();
  const pairWords = new Map<number, Set<number>>();
  const addPairs = (w: number, sign: 1 | -1) => {
    const s = symbols[w];
    for (let i = 0; i + 1 < s.length; i++) {
      const key = s[i] * KEY + s[i + 1];
      pairCount.set(key, (pairCount.get(key) ?? 0) + sign * counts[w]);
      if (sign > 0) {
        let set = pairWords.get(key);
        if (!set) pairWords.set(key, (set = new Set()));
        set.add(w);
      }
    }
  };
  for (let w = 0; w < symbols.length; w++) addPairs(w, 1);

  const merges: Array<[string, string]> = [];
  while (vocab.length < options.vocabSize) {
    let best = -1;
    let bestCount = 0;
    for (const [key, n] of pairCount) {
      if (n > bestCount || (n === bestCount && n > 0 && key < best)) {
        best = key;
        bestCount = n;
      }
    }
    if (best < 0 || bestCount < options.minFrequency) break;
    const left = Math.floor(best / KEY);
    const right = best % KEY;
    const merged = vocab.length;
    vocab.push(vocab[left] + vocab[right]);
    merges.push([vocab[left], vocab[right]]);

    const touched = [...(pairWords.get(best) ?? [])].sort((a, b) => a - b);
    for (const w of touched) {
      const s = symbols[w];
      addPairs(w, -1);
      const out: number[] = [];
      for (let i = 0; i < s.length; i++) {
        if (i + 1 < s.length && s[i] === left && s[i + 1] === right) {
          out.push(merged);
          i++;
        } else {
          out.push(s[i]);
        }
      }
      symbols[w] = out;
      addPairs(w, 1);
    }
    pairCount.delete(best);
    pairWords.delete(best);
    // Drop emptied pairs so the max scan stays proportional to live pairs.
    for (const [key, n] of pairCount) if (n <= 0) pairCount.delete(key);
  }
  return { vocab, merges };
}
