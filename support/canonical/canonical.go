// Package canonical turns JSON text into one canonical byte form and hashes
// it, so that the same tool arguments sent with a different key order or
// different whitespace get the same hash. Ingest stores this hash on every
// tool span (schema.Span.ArgsHash) and replay matches recorded calls by it, so
// both must call the functions here and nothing else.
//
// The canonical form is: object keys sorted (byte order of their decoded
// UTF-8 text, recursively), arrays kept in their order, no insignificant
// whitespace, numbers kept exactly as their literal text (1.0 and 1 stay
// distinct), strings re-encoded as encoding/json does without HTML escaping
// (so "<" stays "<"; U+2028 and U+2029 are escaped and invalid UTF-8 becomes
// U+FFFD, as encoding/json does). When an object repeats a key, the last value
// wins. This is exactly what decoding with encoding/json (UseNumber, into any)
// and re-encoding with sorted keys gives; the package's tests check the two
// agree. JSON does it in a single pass because it runs on the ingest hot path.
package canonical

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// maxDepth is encoding/json's nesting limit: a value nested deeper is not
// valid JSON to json.Valid, so it is not valid here either.
const maxDepth = 10000

// JSON returns the canonical form of one JSON value. It fails when raw is not
// exactly one valid JSON value (surrounding whitespace is allowed). The output
// is stable across versions of tally: stored ArgsHash values and replay
// fixtures depend on it.
func JSON(raw []byte) ([]byte, error) {
	var small [16]member
	c := canonicalizer{out: make([]byte, 0, len(raw)), members: small[:0]}
	if !c.canonical(string(raw)) {
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("canonical: decode JSON: %w", err)
		}
		return nil, errors.New("canonical: decode JSON: invalid JSON")
	}
	return c.out, nil
}

// Hash returns the lowercase hex SHA-256 of raw's canonical JSON form, or of
// raw's bytes as they are when raw is not valid JSON (including the empty
// string).
func Hash(raw string) string {
	var small [16]member
	h := Hasher{c: canonicalizer{out: make([]byte, 0, len(raw)), members: small[:0]}}
	return h.Hash(raw)
}

// Hasher computes Hash keeping its buffers between calls, so a
// caller hashing many values (ingest, once per tool span) allocates only
// the result. It is not safe for concurrent use; the zero value is ready.
type Hasher struct {
	c canonicalizer
}

// maxKeptBytes bounds the buffers a Hasher keeps after a call: a rare huge
// value is hashed, but its buffers are not held for the next.
const maxKeptBytes = 1 << 20

// Hash is the package's Hash.
func (h *Hasher) Hash(raw string) string {
	var sum [sha256.Size]byte
	if h.c.canonical(raw) {
		sum = sha256.Sum256(h.c.out)
	} else {
		sum = sha256.Sum256([]byte(raw)) // rare: not JSON
	}
	if cap(h.c.out) > maxKeptBytes || cap(h.c.tmp) > maxKeptBytes || cap(h.c.dec) > maxKeptBytes {
		h.c = canonicalizer{}
	}
	var text [2 * sha256.Size]byte
	hex.Encode(text[:], sum[:])
	return string(text[:])
}

// canonicalizer validates and rewrites JSON in one pass; its buffers are
// reused from one value to the next.
type canonicalizer struct {
	src     string
	pos     int
	depth   int
	bad     bool // src is not valid JSON: the output is meaningless
	out     []byte
	tmp     []byte   // members of the object being sorted
	dec     []byte   // a decoded string value
	members []member // a stack: each open object's members, innermost last
}

// member is one "key":value of an object, as written to out.
type member struct {
	key        string // decoded key text
	start, end int    // the member's bytes in out
}

// canonical writes src's canonical form to out and reports whether src
// is exactly one valid JSON value, as json.Valid decides.
func (c *canonicalizer) canonical(src string) bool {
	*c = canonicalizer{src: src, out: c.out[:0], tmp: c.tmp[:0], dec: c.dec[:0], members: c.members[:0]}
	c.value()
	c.skipSpace()
	return !c.bad && c.pos == len(c.src)
}

// peek is the byte at pos, or 0 past the end (never valid where a token
// is expected, so every check at the end fails).
func (c *canonicalizer) peek() byte {
	if c.pos < len(c.src) {
		return c.src[c.pos]
	}
	return 0
}

// expect consumes ch, or marks src invalid.
func (c *canonicalizer) expect(ch byte) {
	if c.peek() != ch {
		c.bad = true
		return
	}
	c.pos++
}

func (c *canonicalizer) skipSpace() {
	for c.pos < len(c.src) {
		switch c.src[c.pos] {
		case ' ', '\t', '\n', '\r':
			c.pos++
		default:
			return
		}
	}
}

func (c *canonicalizer) value() {
	if c.bad {
		return
	}
	c.skipSpace()
	switch ch := c.peek(); {
	case ch == '{':
		c.object()
	case ch == '[':
		c.array()
	case ch == '"':
		c.string()
	case ch == 't':
		c.literal("true")
	case ch == 'f':
		c.literal("false")
	case ch == 'n':
		c.literal("null")
	case ch == '-' || ch >= '0' && ch <= '9':
		c.number()
	default:
		c.bad = true
	}
}

func (c *canonicalizer) literal(word string) {
	if !strings.HasPrefix(c.src[c.pos:], word) {
		c.bad = true
		return
	}
	c.pos += len(word)
	c.out = append(c.out, word...)
}

// number copies a number's literal text after checking its grammar:
// -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?
func (c *canonicalizer) number() {
	start := c.pos
	if c.peek() == '-' {
		c.pos++
	}
	switch ch := c.peek(); {
	case ch == '0':
		c.pos++
	case ch >= '1' && ch <= '9':
		c.digits()
	default:
		c.bad = true
		return
	}
	if c.peek() == '.' {
		c.pos++
		if !c.digits() {
			c.bad = true
			return
		}
	}
	if ch := c.peek(); ch == 'e' || ch == 'E' {
		c.pos++
		if ch := c.peek(); ch == '+' || ch == '-' {
			c.pos++
		}
		if !c.digits() {
			c.bad = true
			return
		}
	}
	c.out = append(c.out, c.src[start:c.pos]...)
}

// digits consumes [0-9]* and reports whether there was at least one.
func (c *canonicalizer) digits() bool {
	start := c.pos
	for c.pos < len(c.src) && c.src[c.pos] >= '0' && c.src[c.pos] <= '9' {
		c.pos++
	}
	return c.pos > start
}

// open enters an object or array, failing past encoding/json's depth.
func (c *canonicalizer) open() bool {
	c.pos++
	c.depth++
	if c.depth > maxDepth {
		c.bad = true
	}
	return !c.bad
}

func (c *canonicalizer) array() {
	if !c.open() {
		return
	}
	c.out = append(c.out, '[')
	c.skipSpace()
	if c.peek() == ']' {
		c.pos++
		c.out = append(c.out, ']')
		c.depth--
		return
	}
	for !c.bad {
		c.value()
		c.skipSpace()
		switch c.peek() {
		case ']':
			c.pos++
			c.out = append(c.out, ']')
			c.depth--
			return
		case ',':
			c.pos++
			c.out = append(c.out, ',')
		default:
			c.bad = true
		}
	}
}

func (c *canonicalizer) object() {
	if !c.open() {
		return
	}
	c.skipSpace()
	if c.peek() == '}' {
		c.pos++
		c.out = append(c.out, "{}"...)
		c.depth--
		return
	}
	base, mbase := len(c.out), len(c.members)
	for {
		c.skipSpace()
		if c.bad || c.peek() != '"' {
			c.bad = true
			return
		}
		start := len(c.out)
		key, decoded := c.string()
		if decoded {
			key = string(c.dec)
		}
		c.skipSpace()
		c.expect(':')
		c.out = append(c.out, ':')
		c.value()
		if c.bad {
			return
		}
		c.members = append(c.members, member{key: key, start: start - base, end: len(c.out) - base})
		c.skipSpace()
		if c.peek() == '}' {
			c.pos++
			break
		}
		c.expect(',')
	}
	members := c.members[mbase:]
	slices.SortStableFunc(members, func(a, b member) int { return strings.Compare(a.key, b.key) })
	c.tmp = append(c.tmp[:0], c.out[base:]...)
	c.out = append(c.out[:base], '{')
	first := true
	for i, m := range members {
		if i+1 < len(members) && m.key == members[i+1].key {
			continue // a later duplicate wins
		}
		if !first {
			c.out = append(c.out, ',')
		}
		first = false
		c.out = append(c.out, c.tmp[m.start:m.end]...)
	}
	c.out = append(c.out, '}')
	c.members = c.members[:mbase]
	c.depth--
}

// string checks and re-encodes the string at pos. Its decoded text is
// plain, or in dec when decoded.
func (c *canonicalizer) string() (plain string, decoded bool) {
	c.pos++ // opening quote
	start, escaped, ascii := c.pos, false, true
	for {
		if c.pos >= len(c.src) {
			c.bad = true
			return "", false
		}
		ch := c.src[c.pos]
		if ch == '"' {
			break
		}
		switch {
		case ch < 0x20:
			c.bad = true // control characters must be escaped
			return "", false
		case ch == '\\':
			if !c.escape() {
				c.bad = true
				return "", false
			}
			escaped = true
		case ch >= utf8.RuneSelf:
			ascii = false
			c.pos++
		default:
			c.pos++
		}
	}
	body := c.src[start:c.pos]
	c.pos++ // closing quote
	if !escaped && (ascii || copyable(body)) {
		// Nothing to unescape and no control characters: nothing that
		// needs escaping either, so copy as is.
		c.out = append(c.out, '"')
		c.out = append(c.out, body...)
		c.out = append(c.out, '"')
		return body, false
	}
	c.dec = unquote(c.dec[:0], body)
	c.out = AppendString(c.out, string(c.dec))
	return "", true
}

// escape consumes one valid escape sequence at pos and reports whether it
// was one.
func (c *canonicalizer) escape() bool {
	if c.pos+1 >= len(c.src) {
		return false
	}
	switch c.src[c.pos+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		c.pos += 2
		return true
	case 'u':
		if c.pos+6 > len(c.src) {
			return false
		}
		for _, h := range []byte(c.src[c.pos+2 : c.pos+6]) {
			if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
				return false
			}
		}
		c.pos += 6
		return true
	}
	return false
}

// copyable reports whether non-ASCII text can be copied into the output
// unchanged: valid UTF-8 without U+2028 or U+2029, which AppendString escapes.
func copyable(s string) bool {
	return utf8.ValidString(s) && !strings.Contains(s, "\u2028") && !strings.Contains(s, "\u2029")
}

// unquote appends the decoded body of a valid JSON string to b the way
// encoding/json decodes it: escapes resolved, surrogate pairs joined, lone
// surrogates and invalid UTF-8 replaced by U+FFFD.
func unquote(b []byte, s string) []byte {
	for r := 0; r < len(s); {
		ch := s[r]
		switch {
		case ch == '\\':
			switch s[r+1] {
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				rr := hex4(s[r+2 : r+6])
				r += 6
				if utf16.IsSurrogate(rr) {
					if r+6 <= len(s) && s[r] == '\\' && s[r+1] == 'u' {
						if dec := utf16.DecodeRune(rr, hex4(s[r+2:r+6])); dec != unicode.ReplacementChar {
							b = utf8.AppendRune(b, dec)
							r += 6
							continue
						}
					}
					rr = unicode.ReplacementChar
				}
				b = utf8.AppendRune(b, rr)
				continue
			default: // " \ /
				b = append(b, s[r+1])
			}
			r += 2
		case ch < utf8.RuneSelf:
			b = append(b, ch)
			r++
		default:
			rr, size := utf8.DecodeRuneInString(s[r:])
			if rr == utf8.RuneError && size == 1 {
				b = utf8.AppendRune(b, unicode.ReplacementChar)
			} else {
				b = append(b, s[r:r+size]...)
			}
			r += size
		}
	}
	return b
}

// hex4 reads four hex digits (already checked by escape).
func hex4(s string) rune {
	var r rune
	for _, ch := range []byte(s) {
		switch {
		case ch >= '0' && ch <= '9':
			ch -= '0'
		case ch >= 'a' && ch <= 'f':
			ch = ch - 'a' + 10
		default:
			ch = ch - 'A' + 10
		}
		r = r<<4 | rune(ch)
	}
	return r
}

const hexDigits = "0123456789abcdef"

// AppendString appends s to b as a JSON string, escaped exactly as
// encoding/json escapes it with HTML escaping off: `"`, `\` and control
// characters (\b \f \n \r \t, others as \u00XX), U+2028 and U+2029 as
// \u2028 and \u2029, each invalid UTF-8 byte as \ufffd; nothing else.
func AppendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
