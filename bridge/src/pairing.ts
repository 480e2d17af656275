/**
 * Who may be the bridge's tab: a one-time pairing code (printed in the pairing link) is traded
 * once for a credential, which the tab keeps to reconnect after reloads until Disconnect. Both
 * live only in this process's memory, so a restarted bridge needs a new pairing. Wrong codes are
 * counted: after MAX_WRONG_CODES pairing closes until the bridge restarts, so the code (40 bits)
 * cannot be guessed by trying.
 *
 * Not here: the sockets (tab-channel.ts).
 */
import { createHash, randomBytes, randomInt, timingSafeEqual } from 'node:crypto';

/** Letters and digits that cannot be confused when typed or read aloud (no 0/O, 1/I/L, U/V). */
const ALPHABET = 'ABCDEFGHJKMNPQRSTWXYZ23456789';
export const MAX_WRONG_CODES = 10;

/** A new pairing code, `XXXX-XXXX`. */
export function newPairingCode(): string {
  const pick = () => ALPHABET[randomInt(ALPHABET.length)];
  return `${Array.from({ length: 4 }, pick).join('')}-${Array.from({ length: 4 }, pick).join('')}`;
}

const digest = (s: string) => createHash('sha256').update(s).digest();
const same = (a: string, b: string) => timingSafeEqual(digest(a), digest(b));

export type PairResult = { ok: true; credential: string } | { ok: false; reason: 'wrong-code' | 'closed' };

export class Pairing {
  /** The code a tab may pair with now; null once used (until Disconnect) or after too many wrong tries. */
  private code: string | null;
  private credential: string | null = null;
  private wrong = 0;

  constructor(private readonly makeCode: () => string = newPairingCode) {
    this.code = makeCode();
  }

  /** The code to print, or null when none is open. */
  get pendingCode(): string | null {
    return this.code;
  }

  get paired(): boolean {
    return this.credential !== null;
  }

  /** Trades the code for a credential (once). Codes compare case-insensitively, spaces ignored. */
  pair(code: string): PairResult {
    if (this.code === null) return { ok: false, reason: 'closed' };
    const typed = code.toUpperCase().replace(/\s+/g, '');
    if (!same(typed, this.code)) {
      if (++this.wrong >= MAX_WRONG_CODES) this.code = null;
      return { ok: false, reason: this.code === null ? 'closed' : 'wrong-code' };
    }
    this.code = null;
    this.credential = randomBytes(32).toString('base64url');
    return { ok: true, credential: this.credential };
  }

  /** Whether `credential` is the current one. */
  accepts(credential: string): boolean {
    return this.credential !== null && same(credential, this.credential);
  }

  /** Disconnect: the credential stops working and a fresh code opens (returned, for the new link). */
  unpair(): string {
    this.credential = null;
    this.wrong = 0;
    this.code = this.makeCode();
    return this.code;
  }
}
