package ingest

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

// CanonicalJSON re-encodes one JSON value in tally's canonical form, so that
// two encodings of the same value compare equal byte for byte:
//
//   - object keys sorted by the bytes of their decoded UTF-8 text,
//     recursively; for a key that appears twice, the last value wins;
//   - no insignificant whitespace;
//   - numbers kept as their literal text (1.0 and 1 stay different; no
//     float rounding);
//   - strings re-escaped minimally: `"`, `\` and control characters
//     (\b \f \n \r \t or \u00XX), nothing else (no HTML escaping, no
//     \u escapes for other characters); invalid UTF-8 and lone surrogates
//     become U+FFFD.
//
// This is exactly what decoding with encoding/json (json.Decoder.UseNumber,
// into any) and re-encoding with sorted keys gives; the package's tests
// check the two agree. It is implemented as a single pass over the input
// because it runs on the ingest hot path.
//
// It fails on anything but exactly one valid JSON value (surrounding
// whitespace allowed). The output is stable across versions of tally:
// package replay and stored ArgsHash values depend on it.
func CanonicalJSON(raw []byte) ([]byte, error) {
	if !json.Valid(raw) {
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("canonical json: %w", err)
		}
		return nil, errors.New("canonical json: invalid JSON")
	}
	var small [16]member
	c := canonicalizer{src: raw, out: make([]byte, 0, len(raw)), members: small[:0]}
	c.value()
	return c.out, nil
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
	start, escaped := c.pos, false
	for c.src[c.pos] != '"' {
		if c.src[c.pos] == '\\' {
			escaped = true
			c.pos++
		}
		c.pos++
	}
	body := c.src[start:c.pos]
	c.pos++ // closing quote
	if !escaped && utf8.Valid(body) {
		// Nothing to unescape and nothing json.Valid allows here needs
		// escaping: copy as is.
		c.out = append(c.out, '"')
		c.out = append(c.out, body...)
		c.out = append(c.out, '"')
		return body
	}
	decoded := unquoteJSON(body)
	c.out = appendJSONString(c.out, string(decoded))
	return decoded
}

// unquoteJSON decodes the body of a valid JSON string the way encoding/json
// does: escapes resolved, surrogate pairs joined, lone surrogates and
// invalid UTF-8 replaced by U+FFFD.
func unquoteJSON(s []byte) []byte {
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

// ArgsHash is the identity of a tool call's arguments: the lowercase hex
// SHA-256 of CanonicalJSON(raw) when raw is valid JSON, else of raw's bytes
// unchanged. Equal arguments give equal hashes whatever their key order or
// whitespace; replay matches recorded calls by it.
func ArgsHash(raw string) string {
	data := []byte(raw)
	if canon, err := CanonicalJSON(data); err == nil {
		data = canon
	}
	sum := sha256.Sum256(data)
	var h [2 * sha256.Size]byte
	hex.Encode(h[:], sum[:])
	return string(h[:])
}
