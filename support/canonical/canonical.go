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
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// JSON returns the canonical form of one JSON value. It fails when raw is not
// exactly one valid JSON value (surrounding whitespace is allowed). The output
// is stable across versions of tally: stored ArgsHash values and replay
// fixtures depend on it.
func JSON(raw []byte) ([]byte, error) {
	if !json.Valid(raw) {
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("canonical: decode JSON: %w", err)
		}
		return nil, errors.New("canonical: decode JSON: invalid JSON")
	}
	var small [16]member
	c := canonicalizer{src: raw, out: make([]byte, 0, len(raw)), members: small[:0]}
	c.value()
	return c.out, nil
}

// Hash returns the lowercase hex SHA-256 of raw's canonical JSON form, or of
// raw's bytes as they are when raw is not valid JSON (including the empty
// string).
func Hash(raw string) string {
	data := []byte(raw)
	if canon, err := JSON(data); err == nil {
		data = canon
	}
	sum := sha256.Sum256(data)
	var h [2 * sha256.Size]byte
	hex.Encode(h[:], sum[:])
	return string(h[:])
}

// canonicalizer rewrites JSON already checked by json.Valid, so it can
// trust the structure.
type canonicalizer struct {
	src     []byte
	pos     int
	out     []byte
	tmp     []byte   // members of the object being sorted
	members []member // a stack: each open object's members, innermost last
}

// member is one "key":value of an object, as written to out.
type member struct {
	key        []byte // decoded key text
	start, end int    // the member's bytes in out
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
	c.skipSpace()
	switch ch := c.src[c.pos]; {
	case ch == '{':
		c.object()
	case ch == '[':
		c.array()
	case ch == '"':
		c.string()
	case ch == 't':
		c.out = append(c.out, "true"...)
		c.pos += 4
	case ch == 'f':
		c.out = append(c.out, "false"...)
		c.pos += 5
	case ch == 'n':
		c.out = append(c.out, "null"...)
		c.pos += 4
	default: // a number: copy its literal text
		start := c.pos
		for c.pos < len(c.src) {
			switch c.src[c.pos] {
			case '-', '+', '.', 'e', 'E', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
				c.pos++
				continue
			}
			break
		}
		c.out = append(c.out, c.src[start:c.pos]...)
	}
}

func (c *canonicalizer) array() {
	c.pos++ // [
	c.out = append(c.out, '[')
	c.skipSpace()
	if c.src[c.pos] == ']' {
		c.pos++
		c.out = append(c.out, ']')
		return
	}
	for {
		c.value()
		c.skipSpace()
		if c.src[c.pos] == ']' {
			c.pos++
			c.out = append(c.out, ']')
			return
		}
		c.pos++ // ,
		c.out = append(c.out, ',')
	}
}

func (c *canonicalizer) object() {
	c.pos++ // {
	c.skipSpace()
	if c.src[c.pos] == '}' {
		c.pos++
		c.out = append(c.out, "{}"...)
		return
	}
	base, mbase := len(c.out), len(c.members)
	for {
		c.skipSpace()
		start := len(c.out)
		key := c.string()
		c.skipSpace()
		c.pos++ // :
		c.out = append(c.out, ':')
		c.value()
		c.members = append(c.members, member{key: key, start: start - base, end: len(c.out) - base})
		c.skipSpace()
		if c.src[c.pos] == '}' {
			c.pos++
			break
		}
		c.pos++ // ,
	}
	members := c.members[mbase:]
	slices.SortStableFunc(members, func(a, b member) int { return bytes.Compare(a.key, b.key) })
	c.tmp = append(c.tmp[:0], c.out[base:]...)
	c.out = append(c.out[:base], '{')
	first := true
	for i, m := range members {
		if i+1 < len(members) && bytes.Equal(m.key, members[i+1].key) {
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
}

// string re-encodes the string at pos and returns its decoded text.
func (c *canonicalizer) string() []byte {
	c.pos++ // opening quote
	start, escaped, ascii := c.pos, false, true
	for ch := c.src[c.pos]; ch != '"'; ch = c.src[c.pos] {
		switch {
		case ch == '\\':
			escaped = true
			c.pos += 2
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
		// Nothing to unescape and, json.Valid having ruled out control
		// characters, nothing that needs escaping: copy as is.
		c.out = append(c.out, '"')
		c.out = append(c.out, body...)
		c.out = append(c.out, '"')
		return body
	}
	decoded := unquote(body)
	c.out = AppendString(c.out, string(decoded))
	return decoded
}

// copyable reports whether non-ASCII text can be copied into the output
// unchanged: valid UTF-8 without U+2028 or U+2029, which AppendString escapes.
func copyable(s []byte) bool {
	return utf8.Valid(s) && !bytes.Contains(s, []byte("\u2028")) && !bytes.Contains(s, []byte("\u2029"))
}

// unquote decodes the body of a valid JSON string the way encoding/json
// does: escapes resolved, surrogate pairs joined, lone surrogates and
// invalid UTF-8 replaced by U+FFFD.
func unquote(s []byte) []byte {
	b := make([]byte, 0, len(s))
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
			rr, size := utf8.DecodeRune(s[r:])
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

// hex4 reads four hex digits (validated by json.Valid).
func hex4(s []byte) rune {
	var r rune
	for _, ch := range s {
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
