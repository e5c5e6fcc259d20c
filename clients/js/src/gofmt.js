// Small pieces of Go's formatting that replay messages are made of, so
// that this package's messages are the Go player's, byte for byte.

const PRINTABLE = /^[\p{L}\p{M}\p{N}\p{P}\p{S}]$/u;

/** Go's strconv.Quote (the %q verb) of a string. */
export function goQuote(s) {
  let out = '"';
  for (const ch of String(s)) {
    const r = ch.codePointAt(0);
    if (r === 0x22 || r === 0x5c) { out += '\\' + ch; continue; }
    const printable = r < 0x80 ? r >= 0x20 && r < 0x7f : r >= 0xd800 && r < 0xe000 ? false : PRINTABLE.test(ch);
    if (printable) { out += ch; continue; }
    switch (r) {
      case 0x07: out += '\\a'; continue;
      case 0x08: out += '\\b'; continue;
      case 0x0c: out += '\\f'; continue;
      case 0x0a: out += '\\n'; continue;
      case 0x0d: out += '\\r'; continue;
      case 0x09: out += '\\t'; continue;
      case 0x0b: out += '\\v'; continue;
    }
    if (r < 0x20 || r === 0x7f) out += '\\x' + r.toString(16).padStart(2, '0');
    else if (r >= 0xd800 && r < 0xe000) out += '\\ufffd';
    else if (r < 0x10000) out += '\\u' + r.toString(16).padStart(4, '0');
    else out += '\\U' + r.toString(16).padStart(8, '0');
  }
  return out + '"';
}

/** Go's time.Duration String of a whole number of seconds. */
export function goSeconds(sec) {
  if (sec === 0) return '0s';
  const neg = sec < 0;
  let s = Math.abs(sec);
  const h = Math.floor(s / 3600);
  s -= h * 3600;
  const m = Math.floor(s / 60);
  s -= m * 60;
  let out = h > 0 ? `${h}h${m}m${s}s` : m > 0 ? `${m}m${s}s` : `${s}s`;
  return neg ? '-' + out : out;
}

// unicode.IsSpace's set, which strings.TrimSpace trims.
const SPACE = '\t\n\v\f\r \u0085\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000';

/** Go's strings.TrimSpace. */
export function goTrimSpace(s) {
  let a = 0, b = s.length;
  while (a < b && SPACE.includes(s[a])) a++;
  while (b > a && SPACE.includes(s[b - 1])) b--;
  return s.slice(a, b);
}

/**
 * Go's strconv.Atoi: returns the integer, or throws an Error with Go's
 * message (`strconv.Atoi: parsing "x": invalid syntax`).
 */
export function goAtoi(s) {
  const m = /^[+-]?[0-9]+$/.exec(s);
  if (!m) throw new Error(`strconv.Atoi: parsing ${goQuote(s)}: invalid syntax`);
  const n = BigInt(s);
  if (n > 9223372036854775807n || n < -9223372036854775808n) {
    throw new Error(`strconv.Atoi: parsing ${goQuote(s)}: value out of range`);
  }
  return Number(n);
}
