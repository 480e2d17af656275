/**
 * Python's text forms of values, for error messages that must read exactly as vLLM's f-strings
 * print them: floats as `repr(float)` ("-1.0", "1e-07", "inf"), lists and strings as `repr`.
 *
 * Not here: JSON; these strings only ever end up inside an error message.
 */

/** `repr(float(x))`: integral values keep ".0"; exponents have at least two digits. */
export function pyFloat(x: number): string {
  if (Number.isNaN(x)) return 'nan';
  if (!Number.isFinite(x)) return x > 0 ? 'inf' : '-inf';
  if (Object.is(x, -0)) return '-0.0';
  const abs = Math.abs(x);
  if (abs >= 1e16 || (abs !== 0 && abs < 1e-4)) {
    // Python switches to exponent notation at 1e16 and below 1e-4.
    const [mantissa, exponent] = x.toExponential().split('e');
    const sign = exponent.startsWith('-') ? '-' : '+';
    const digits = exponent.replace(/^[+-]/, '').padStart(2, '0');
    return `${mantissa}e${sign}${digits}`;
  }
  const text = String(x);
  return Number.isInteger(x) ? `${text}.0` : text;
}

/** `repr(str)`: single quotes unless the text holds a single quote and no double quote. */
export function pyStr(s: string): string {
  const quote = s.includes("'") && !s.includes('"') ? '"' : "'";
  let out = '';
  for (const ch of s) {
    if (ch === '\\') out += '\\\\';
    else if (ch === quote) out += '\\' + ch;
    else if (ch === '\n') out += '\\n';
    else if (ch === '\r') out += '\\r';
    else if (ch === '\t') out += '\\t';
    else if (ch < ' ' || ch === '\x7f') out += '\\x' + ch.charCodeAt(0).toString(16).padStart(2, '0');
    else out += ch;
  }
  return quote + out + quote;
}

/** `repr` of a JSON-like value: dicts, lists, strings, numbers, True/False/None. */
export function pyRepr(value: unknown): string {
  if (value === null || value === undefined) return 'None';
  if (value === true) return 'True';
  if (value === false) return 'False';
  if (typeof value === 'string') return pyStr(value);
  if (typeof value === 'bigint') return value.toString();
  if (typeof value === 'number') return Number.isInteger(value) ? String(value) : pyFloat(value);
  if (Array.isArray(value)) return `[${value.map(pyRepr).join(', ')}]`;
  if (typeof value === 'object') {
    return `{${Object.entries(value as Record<string, unknown>)
      .map(([k, v]) => `${pyStr(k)}: ${pyRepr(v)}`)
      .join(', ')}}`;
  }
  return String(value);
}
