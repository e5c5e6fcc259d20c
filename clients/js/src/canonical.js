// Canonical JSON and argument hashes, byte for byte as Go's
// support/canonical (the package ingest hashes tool arguments with and the
// Go replay player matches calls by).
//
// The canonical form: object keys sorted by the bytes of their decoded UTF-8
// text (recursively), arrays in order, no insignificant whitespace, numbers
// kept as their literal text (1.0 and 1 stay distinct), strings re-encoded as
// Go's encoding/json does without HTML escaping ("<" stays "<"; U+2028 and
// U+2029 escaped; invalid UTF-8 and lone surrogate escapes become U+FFFD).
// When an object repeats a key, the last value wins.
//
// Everything here works on UTF-8 bytes, so that the result is Go's even for
// input that is not valid UTF-8.

import { createHash } from 'node:crypto';

const MAX_DEPTH = 10000; // encoding/json's nesting limit
const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: false });

/** Error thrown for text that is not exactly one valid JSON value. */
export class CanonicalError extends Error {
  constructor(message = 'canonical: decode JSON: invalid JSON') {
    super(message);
    this.name = 'CanonicalError';
  }
}

/** @param {string|Uint8Array} input */
export function toBytes(input) {
  if (typeof input === 'string') return encoder.encode(input);
  if (input instanceof Uint8Array) return input;
  if (input instanceof ArrayBuffer) return new Uint8Array(input);
  throw new TypeError('expected a string or Uint8Array');
}

/** Growable byte buffer. */
class Buf {
  constructor(n = 64) {
    this.b = new Uint8Array(Math.max(16, n));
    this.n = 0;
  }
  grow(k) {
    if (this.n + k <= this.b.length) return;
    let cap = this.b.length * 2;
    while (cap < this.n + k) cap *= 2;
    const nb = new Uint8Array(cap);
    nb.set(this.b.subarray(0, this.n));
    this.b = nb;
  }
  push(c) {
    if (this.n === this.b.length) this.grow(1);
    this.b[this.n++] = c;
  }
  append(bytes, start = 0, end = bytes.length) {
    const k = end - start;
    this.grow(k);
    this.b.set(bytes.subarray(start, end), this.n);
    this.n += k;
  }
  ascii(s) {
    this.grow(s.length);
    for (let i = 0; i < s.length; i++) this.b[this.n++] = s.charCodeAt(i);
  }
  bytes() {
    return this.b.slice(0, this.n);
  }
}

// ---- UTF-8, as Go's unicode/utf8 decodes it ----

/**
 * Decodes the rune at s[i]: [rune, size]; [0xFFFD, 1] for an invalid
 * sequence (Go's utf8.DecodeRune, surrogates and overlongs invalid).
 */
export function decodeRune(s, i) {
  const n = s.length - i;
  if (n < 1) return [0xfffd, 0];
  const b0 = s[i];
  if (b0 < 0x80) return [b0, 1];
  let need, lo = 0x80, hi = 0xbf, r;
  if (b0 >= 0xc2 && b0 <= 0xdf) { need = 1; r = b0 & 0x1f; }
  else if (b0 >= 0xe0 && b0 <= 0xef) {
    need = 2; r = b0 & 0x0f;
    if (b0 === 0xe0) lo = 0xa0;
    else if (b0 === 0xed) hi = 0x9f;
  } else if (b0 >= 0xf0 && b0 <= 0xf4) {
    need = 3; r = b0 & 0x07;
    if (b0 === 0xf0) lo = 0x90;
    else if (b0 === 0xf4) hi = 0x8f;
  } else return [0xfffd, 1];
  if (n < need + 1) return [0xfffd, 1];
  const b1 = s[i + 1];
  if (b1 < lo || b1 > hi) return [0xfffd, 1];
  r = (r << 6) | (b1 & 0x3f);
  for (let k = 2; k <= need; k++) {
    const bk = s[i + k];
    if (bk < 0x80 || bk > 0xbf) return [0xfffd, 1];
    r = (r << 6) | (bk & 0x3f);
  }
  return [r, need + 1];
}

function appendRune(out, r) {
  if (r < 0x80) out.push(r);
  else if (r < 0x800) { out.push(0xc0 | (r >> 6)); out.push(0x80 | (r & 0x3f)); }
  else if (r < 0x10000) {
    out.push(0xe0 | (r >> 12)); out.push(0x80 | ((r >> 6) & 0x3f)); out.push(0x80 | (r & 0x3f));
  } else {
    out.push(0xf0 | (r >> 18)); out.push(0x80 | ((r >> 12) & 0x3f));
    out.push(0x80 | ((r >> 6) & 0x3f)); out.push(0x80 | (r & 0x3f));
  }
}

/** Whether s[start:end] is valid UTF-8 without U+2028/U+2029 (Go's copyable). */
function copyable(s, start, end) {
  for (let i = start; i < end;) {
    if (s[i] < 0x80) { i++; continue; }
    const [r, size] = decodeRune(s.subarray(0, end), i);
    if ((r === 0xfffd && size === 1) || r === 0x2028 || r === 0x2029) return false;
    i += size;
  }
  return true;
}

const HEX = '0123456789abcdef';

/**
 * Appends s (bytes) to out as a JSON string escaped exactly as Go's
 * encoding/json with HTML escaping off (canonical.AppendString).
 */
function appendString(out, s) {
  out.push(0x22);
  let start = 0;
  for (let i = 0; i < s.length;) {
    const c = s[i];
    if (c >= 0x20 && c !== 0x22 && c !== 0x5c && c < 0x80) { i++; continue; }
    if (c < 0x80) {
      out.append(s, start, i);
      switch (c) {
        case 0x22: case 0x5c: out.push(0x5c); out.push(c); break;
        case 0x0a: out.ascii('\\n'); break;
        case 0x0d: out.ascii('\\r'); break;
        case 0x09: out.ascii('\\t'); break;
        case 0x08: out.ascii('\\b'); break;
        case 0x0c: out.ascii('\\f'); break;
        default: out.ascii('\\u00' + HEX[c >> 4] + HEX[c & 0xf]);
      }
      i++;
      start = i;
      continue;
    }
    const [r, size] = decodeRune(s, i);
    if (r === 0xfffd && size === 1) {
      out.append(s, start, i);
      out.ascii('\\ufffd');
    } else if (r === 0x2028 || r === 0x2029) {
      out.append(s, start, i);
      out.ascii('\\u202' + HEX[r & 0xf]);
    } else {
      i += size;
      continue;
    }
    i += size;
    start = i;
  }
  out.append(s, start, s.length);
  out.push(0x22);
}

/**
 * A JSON string literal for s, escaped as Go's encoding/json does with HTML
 * escaping off. s may be a string or UTF-8 bytes (invalid bytes become
 * \ufffd, as in Go).
 * @param {string|Uint8Array} s
 */
export function quote(s) {
  const out = new Buf();
  appendString(out, toBytes(s));
  return decoder.decode(out.bytes());
}

function hexVal(h) {
  if (h >= 0x30 && h <= 0x39) return h - 0x30;
  if (h >= 0x61 && h <= 0x66) return h - 0x61 + 10;
  if (h >= 0x41 && h <= 0x46) return h - 0x41 + 10;
  return -1;
}
function hex4(s, i) {
  return (hexVal(s[i]) << 12) | (hexVal(s[i + 1]) << 8) | (hexVal(s[i + 2]) << 4) | hexVal(s[i + 3]);
}

/** Decodes a valid JSON string body s[start:end] the way encoding/json does. */
function unquote(s, start, end) {
  const out = new Buf(end - start);
  const body = s.subarray(0, end);
  for (let r = start; r < end;) {
    const ch = s[r];
    if (ch === 0x5c) {
      const e = s[r + 1];
      switch (e) {
        case 0x62: out.push(0x08); break;
        case 0x66: out.push(0x0c); break;
        case 0x6e: out.push(0x0a); break;
        case 0x72: out.push(0x0d); break;
        case 0x74: out.push(0x09); break;
        case 0x75: {
          let rr = hex4(s, r + 2);
          r += 6;
          if (rr >= 0xd800 && rr < 0xe000) {
            if (rr < 0xdc00 && r + 6 <= end && s[r] === 0x5c && s[r + 1] === 0x75) {
              const r2 = hex4(s, r + 2);
              if (r2 >= 0xdc00 && r2 < 0xe000) {
                appendRune(out, ((rr - 0xd800) << 10 | (r2 - 0xdc00)) + 0x10000);
                r += 6;
                continue;
              }
            }
            rr = 0xfffd;
          }
          appendRune(out, rr);
          continue;
        }
        default: out.push(e); // " \ /
      }
      r += 2;
    } else if (ch < 0x80) {
      out.push(ch);
      r++;
    } else {
      const [rr, size] = decodeRune(body, r);
      if (rr === 0xfffd && size === 1) appendRune(out, 0xfffd);
      else out.append(s, r, r + size);
      r += size;
    }
  }
  return out.bytes();
}

function binaryKey(bytes) {
  // A string whose code units are the bytes: compares in byte order.
  let k = '';
  for (let i = 0; i < bytes.length; i += 8192) {
    k += String.fromCharCode.apply(null, bytes.subarray(i, i + 8192));
  }
  return k;
}

/**
 * The scanner shared by the canonicalizer and the tree parser: it validates
 * JSON as Go's json.Valid does, iteratively (no recursion limit but Go's
 * 10000 levels).
 */
class Scanner {
  constructor(src) {
    this.src = src;
    this.pos = 0;
    this.bad = false;
  }
  peek() {
    return this.pos < this.src.length ? this.src[this.pos] : 0;
  }
  skipSpace() {
    const s = this.src;
    while (this.pos < s.length) {
      const c = s[this.pos];
      if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) this.pos++;
      else return;
    }
  }
  literal(word) {
    const s = this.src;
    for (let i = 0; i < word.length; i++) {
      if (s[this.pos + i] !== word.charCodeAt(i)) { this.bad = true; return; }
    }
    this.pos += word.length;
  }
  digits() {
    const start = this.pos;
    const s = this.src;
    while (this.pos < s.length && s[this.pos] >= 0x30 && s[this.pos] <= 0x39) this.pos++;
    return this.pos > start;
  }
  number() {
    if (this.peek() === 0x2d) this.pos++;
    const ch = this.peek();
    if (ch === 0x30) this.pos++;
    else if (ch >= 0x31 && ch <= 0x39) this.digits();
    else { this.bad = true; return; }
    if (this.peek() === 0x2e) {
      this.pos++;
      if (!this.digits()) { this.bad = true; return; }
    }
    const e = this.peek();
    if (e === 0x65 || e === 0x45) {
      this.pos++;
      const sg = this.peek();
      if (sg === 0x2b || sg === 0x2d) this.pos++;
      if (!this.digits()) { this.bad = true; }
    }
  }
  // string scans a string at pos (at its opening quote): returns
  // {start, end, escaped, ascii} of its body, or null (bad).
  string() {
    const s = this.src;
    this.pos++;
    const start = this.pos;
    let escaped = false, ascii = true;
    for (;;) {
      if (this.pos >= s.length) { this.bad = true; return null; }
      const ch = s[this.pos];
      if (ch === 0x22) break;
      if (ch < 0x20) { this.bad = true; return null; }
      if (ch === 0x5c) {
        if (!this.escape()) { this.bad = true; return null; }
        escaped = true;
      } else {
        if (ch >= 0x80) ascii = false;
        this.pos++;
      }
    }
    const end = this.pos;
    this.pos++;
    return { start, end, escaped, ascii };
  }
  escape() {
    const s = this.src;
    if (this.pos + 1 >= s.length) return false;
    switch (s[this.pos + 1]) {
      case 0x22: case 0x5c: case 0x2f: case 0x62: case 0x66: case 0x6e: case 0x72: case 0x74:
        this.pos += 2;
        return true;
      case 0x75:
        if (this.pos + 6 > s.length) return false;
        for (let i = this.pos + 2; i < this.pos + 6; i++) if (hexVal(s[i]) < 0) return false;
        this.pos += 6;
        return true;
    }
    return false;
  }
}

/**
 * Canonical form of src bytes, or null when src is not exactly one valid
 * JSON value. Port of canonical.canonicalizer, made iterative.
 */
function canonicalOf(src) {
  const sc = new Scanner(src);
  const out = new Buf(src.length + 16);
  const stack = []; // frames: {obj, base, members, key, start}
  let depth = 0;
  // state: 0 = parse a value, 1 = a value just ended, 2 = parse an object key
  let state = 0;
  for (;;) {
    if (sc.bad) return null;
    if (state === 0) {
      sc.skipSpace();
      const ch = sc.peek();
      if (ch === 0x7b || ch === 0x5b) {
        sc.pos++;
        depth++;
        if (depth > MAX_DEPTH) return null;
        sc.skipSpace();
        if (ch === 0x7b) {
          if (sc.peek() === 0x7d) { sc.pos++; out.ascii('{}'); depth--; state = 1; continue; }
          stack.push({ obj: true, base: out.n, members: [], key: '', start: 0 });
          state = 2;
        } else {
          out.push(0x5b);
          if (sc.peek() === 0x5d) { sc.pos++; out.push(0x5d); depth--; state = 1; continue; }
          stack.push({ obj: false });
          state = 0;
        }
        continue;
      }
      if (ch === 0x22) {
        stringOut(sc, out);
      } else if (ch === 0x74) { sc.literal('true'); out.ascii('true'); }
      else if (ch === 0x66) { sc.literal('false'); out.ascii('false'); }
      else if (ch === 0x6e) { sc.literal('null'); out.ascii('null'); }
      else if (ch === 0x2d || (ch >= 0x30 && ch <= 0x39)) {
        const start = sc.pos;
        sc.number();
        if (!sc.bad) out.append(src, start, sc.pos);
      } else return null;
      state = 1;
      continue;
    }
    if (state === 2) {
      sc.skipSpace();
      if (sc.peek() !== 0x22) return null;
      const top = stack[stack.length - 1];
      top.start = out.n;
      top.key = stringOut(sc, out);
      if (sc.bad) return null;
      sc.skipSpace();
      if (sc.peek() !== 0x3a) return null;
      sc.pos++;
      out.push(0x3a);
      state = 0;
      continue;
    }
    // state 1: a value ended
    if (stack.length === 0) break;
    const top = stack[stack.length - 1];
    sc.skipSpace();
    if (!top.obj) {
      const c = sc.peek();
      if (c === 0x5d) { sc.pos++; out.push(0x5d); depth--; stack.pop(); state = 1; }
      else if (c === 0x2c) { sc.pos++; out.push(0x2c); state = 0; }
      else return null;
      continue;
    }
    top.members.push({ key: top.key, start: top.start - top.base, end: out.n - top.base });
    const c = sc.peek();
    if (c === 0x2c) { sc.pos++; state = 2; continue; }
    if (c !== 0x7d) return null;
    sc.pos++;
    // Sort the members (stable), the last of equal keys wins.
    const ms = top.members;
    ms.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    const tmp = out.b.slice(top.base, out.n);
    out.n = top.base;
    out.push(0x7b);
    let first = true;
    for (let i = 0; i < ms.length; i++) {
      if (i + 1 < ms.length && ms[i].key === ms[i + 1].key) continue;
      if (!first) out.push(0x2c);
      first = false;
      out.append(tmp, ms[i].start, ms[i].end);
    }
    out.push(0x7d);
    depth--;
    stack.pop();
    state = 1;
  }
  sc.skipSpace();
  if (sc.bad || sc.pos !== src.length) return null;
  return out.bytes();
}

/** Scans the string at sc.pos, writes it canonically, returns its decoded text as a byte-order key. */
function stringOut(sc, out) {
  const src = sc.src;
  const st = sc.string();
  if (st === null) return '';
  if (!st.escaped && (st.ascii || copyable(src, st.start, st.end))) {
    out.push(0x22);
    out.append(src, st.start, st.end);
    out.push(0x22);
    return binaryKey(src.subarray(st.start, st.end));
  }
  const dec = unquote(src, st.start, st.end);
  appendString(out, dec);
  return binaryKey(dec);
}

/**
 * The canonical form of one JSON value (Go's canonical.JSON), as a string.
 * Throws CanonicalError when the input is not exactly one valid JSON value
 * (surrounding whitespace allowed).
 * @param {string|Uint8Array} input
 * @returns {string}
 */
export function canonicalize(input) {
  const out = canonicalOf(toBytes(input));
  if (out === null) throw new CanonicalError();
  return decoder.decode(out);
}

/** Canonical bytes of input, or null when it is not valid JSON. */
export function canonicalBytes(input) {
  return canonicalOf(toBytes(input));
}

/** Whether input is exactly one valid JSON value (Go's json.Valid). */
export function isValidJSON(input) {
  return canonicalOf(toBytes(input)) !== null;
}

/**
 * Lowercase hex SHA-256 of the input's canonical JSON form, or of its bytes
 * as they are when it is not valid JSON (Go's canonical.Hash): the args_hash
 * ingest stores and players match by.
 * @param {string|Uint8Array} input
 */
export function argsHash(input) {
  const bytes = toBytes(input);
  const canon = canonicalOf(bytes);
  return createHash('sha256').update(canon ?? bytes).digest('hex');
}

/**
 * Go's json.Compact for valid JSON bytes: insignificant whitespace removed,
 * everything else (key order, escapes, numbers) kept.
 */
export function compactBytes(src) {
  const out = new Buf(src.length);
  let inStr = false;
  for (let i = 0; i < src.length; i++) {
    const c = src[i];
    if (inStr) {
      out.push(c);
      if (c === 0x5c) { out.push(src[++i]); continue; }
      if (c === 0x22) inStr = false;
      continue;
    }
    if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) continue;
    if (c === 0x22) inStr = true;
    out.push(c);
  }
  return out.bytes();
}

/**
 * Encodes a JavaScript value as JSON the way Go's encoding/json encodes the
 * equivalent Go value (HTML escaping off): numbers as Go formats float64
 * (String(n), with -0 as "-0"), BigInt as its digits, undefined and
 * functions dropped from objects and null in arrays (as JSON.stringify),
 * toJSON honoured. Throws for NaN, ±Infinity and cycles.
 * @param {unknown} value
 * @returns {string}
 */
export function encodeJSON(value) {
  const seen = new Set();
  const enc = (v, inArray) => {
    if (v !== null && typeof v === 'object' && typeof v.toJSON === 'function') v = v.toJSON();
    switch (typeof v) {
      case 'undefined': case 'function': case 'symbol':
        return inArray ? 'null' : undefined;
      case 'boolean': return v ? 'true' : 'false';
      case 'bigint': return v.toString();
      case 'number':
        if (!Number.isFinite(v)) throw new TypeError(`json: unsupported value: ${v}`);
        return Object.is(v, -0) ? '-0' : String(v);
      case 'string': return quote(v);
    }
    if (v === null) return 'null';
    if (seen.has(v)) throw new TypeError('json: unsupported value: encountered a cycle');
    seen.add(v);
    let s;
    if (Array.isArray(v)) {
      s = '[' + v.map((x) => enc(x, true)).join(',') + ']';
    } else {
      const entries = v instanceof Map ? [...v.entries()].map(([k, x]) => [String(k), x]) : Object.entries(v);
      const parts = [];
      for (const [k, x] of entries) {
        const e = enc(x, false);
        if (e !== undefined) parts.push(quote(k) + ':' + e);
      }
      s = '{' + parts.join(',') + '}';
    }
    seen.delete(v);
    return s;
  };
  const out = enc(value, true);
  return out === undefined ? 'null' : out;
}

/**
 * The text a call's arguments are hashed from, as Go's Player.Call takes
 * them: a string or bytes is the arguments' JSON text (non-JSON text is
 * matched as is); any other value is encoded as JSON (undefined and null
 * as null).
 * @param {unknown} args
 * @returns {Uint8Array}
 */
export function argumentsBytes(args) {
  if (typeof args === 'string') return encoder.encode(args);
  if (args instanceof Uint8Array) return args;
  if (args instanceof ArrayBuffer) return new Uint8Array(args);
  return encoder.encode(encodeJSON(args));
}

// ---- a tree parser keeping every value's byte range ----

/**
 * @typedef {{kind:'object', start:number, end:number, members:Array<{key:string, node:Node}>}
 *   | {kind:'array', start:number, end:number, items:Node[]}
 *   | {kind:'string', start:number, end:number, value:string}
 *   | {kind:'number', start:number, end:number, raw:string}
 *   | {kind:'true'|'false'|'null', start:number, end:number}} Node
 */

/**
 * Parses valid JSON bytes into a tree whose nodes know their byte range, so
 * a value's literal text (numbers as written) can be read back. Returns null
 * when src is not valid JSON. Object members keep their order and
 * duplicates.
 * @param {Uint8Array} src
 */
export function parseTree(src) {
  if (canonicalOf(src) === null) return null;
  const sc = new Scanner(src);
  const stack = [];
  let root = null;
  let pendingKey = null;
  const attach = (node) => {
    if (stack.length === 0) { root = node; return; }
    const top = stack[stack.length - 1];
    if (top.kind === 'object') top.members.push({ key: pendingKey, node });
    else top.items.push(node);
  };
  let state = 0; // 0 value, 1 after value, 2 key
  for (;;) {
    if (state === 0) {
      sc.skipSpace();
      const start = sc.pos;
      const ch = sc.peek();
      if (ch === 0x7b || ch === 0x5b) {
        sc.pos++;
        const node = ch === 0x7b ? { kind: 'object', start, end: -1, members: [] } : { kind: 'array', start, end: -1, items: [] };
        attach(node);
        stack.push(node);
        sc.skipSpace();
        if (sc.peek() === (ch === 0x7b ? 0x7d : 0x5d)) { sc.pos++; node.end = sc.pos; stack.pop(); state = 1; continue; }
        state = ch === 0x7b ? 2 : 0;
        continue;
      }
      let node;
      if (ch === 0x22) {
        const st = sc.string();
        node = { kind: 'string', start, end: sc.pos, value: decoder.decode(unquote(src, st.start, st.end)) };
      } else if (ch === 0x74) { sc.literal('true'); node = { kind: 'true', start, end: sc.pos }; }
      else if (ch === 0x66) { sc.literal('false'); node = { kind: 'false', start, end: sc.pos }; }
      else if (ch === 0x6e) { sc.literal('null'); node = { kind: 'null', start, end: sc.pos }; }
      else {
        sc.number();
        node = { kind: 'number', start, end: sc.pos, raw: decoder.decode(src.subarray(start, sc.pos)) };
      }
      attach(node);
      state = 1;
      continue;
    }
    if (state === 2) {
      sc.skipSpace();
      const st = sc.string();
      pendingKey = decoder.decode(unquote(src, st.start, st.end));
      sc.skipSpace();
      sc.pos++; // ':'
      state = 0;
      continue;
    }
    if (stack.length === 0) break;
    const top = stack[stack.length - 1];
    sc.skipSpace();
    const c = sc.peek();
    sc.pos++;
    if (c === 0x2c) { state = top.kind === 'object' ? 2 : 0; continue; }
    top.end = sc.pos; // } or ]
    stack.pop();
    state = 1;
  }
  return root;
}

/** UTF-8 text of bytes (invalid sequences as U+FFFD). */
export function utf8(bytes) {
  return decoder.decode(bytes);
}
