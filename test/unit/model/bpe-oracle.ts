// An independent byte-level BPE encoder written from the documented algorithm (tokenizers docs:
// "Pre-tokenizers: Digits, ByteLevel"; "Models: BPE"), used as the oracle that
// @huggingface/tokenizers must agree with on Hearth's tokenizer.json. Deliberately naive: split
// on added tokens, NFC, isolate each digit, GPT-2 regex, map bytes to their printable characters,
// then repeatedly merge the adjacent pair with the lowest merge rank.
import { BYTE_TO_CHAR } from '../../../src/engine/model/text/byte-level';

const GPT2_SPLIT = /'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+/gu;

export interface TokenizerFile {
  added_tokens: Array<{ id: number; content: string }>;
  model: { vocab: Record<string, number>; merges: Array<[string, string]> };
}

export function oracleEncode(tok: TokenizerFile, text: string): number[] {
  const ranks = new Map(tok.model.merges.map(([a, b], i) => [`${a} ${b}`, i]));
  const added = [...tok.added_tokens].sort((a, b) => b.content.length - a.content.length);
  const out: number[] = [];
  let rest = text;
  while (rest.length > 0) {
    // Earliest added token (longest first at the same position).
    let at = -1;
    let hit: { id: number; content: string } | undefined;
    for (const t of added) {
      const i = rest.indexOf(t.content);
      if (i >= 0 && (at < 0 || i < at)) {
        at = i;
        hit = t;
      }
    }
    const plain = hit ? rest.slice(0, at) : rest;
    out.push(...encodePlain(tok, ranks, plain));
    if (!hit) break;
    out.push(hit.id);
    rest = rest.slice(at + hit.content.length);
  }
  return out;
}

function encodePlain(tok: TokenizerFile, ranks: Map<string, number>, text: string): number[] {
  const ids: number[] = [];
  const pieces = (text.normalize('NFC').match(/\D+|\d/gu) ?? []).flatMap((p) => p.match(GPT2_SPLIT) ?? []);
  for (const piece of pieces) {
    let symbols = [...new TextEncoder().encode(piece)].map((b) => BYTE_TO_CHAR[b]);
    for (;;) {
      let best = -1;
      let bestRank = Infinity;
      for (let i = 0; i + 1 < symbols.length; i++) {
        const r = ranks.get(`${symbols[i]} ${symbols[i + 1]}`);
        if (r !== undefined && r < bestRank) {
          bestRank = r;
          best = i;
        }
      }
      if (best < 0) break;
      symbols = [...symbols.slice(0, best), symbols[best] + symbols[best + 1], ...symbols.slice(best + 2)];
    }
    for (const s of symbols) ids.push(tok.model.vocab[s]);
  }
  return ids;
}
