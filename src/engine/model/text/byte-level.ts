/**
 * GPT-2's byte <-> printable-character table used by byte-level BPE (tokenizers' ByteLevel
 * pre-tokenizer and decoder): printable Latin-1 bytes stand for themselves, the other 68 bytes are
 * shifted to U+0100 and up, so every token of the vocabulary is a printable string ("Ġ" = space).
 * Used by the incremental detokenizer (exact byte-level streaming) and by scripts/model-making
 * (naming the 256 base tokens of the trained BPE).
 */

export const BYTE_TO_CHAR: readonly string[] = (() => {
  const printable = (b: number) => (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
  const out: string[] = [];
  let shifted = 0;
  for (let b = 0; b < 256; b++) out.push(String.fromCodePoint(printable(b) ? b : 256 + shifted++));
  return out;
})();

export const CHAR_TO_BYTE: ReadonlyMap<string, number> = new Map(BYTE_TO_CHAR.map((c, b) => [c, b]));
