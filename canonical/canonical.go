// Package canonical turns JSON text into one canonical byte form and hashes
// it, so that the same tool arguments sent with a different key order or
// different whitespace get the same hash. Ingest stores this hash on every
// tool span (schema.Span.ArgsHash) and replay matches recorded calls by it, so
// both must call the functions here and nothing else.
//
// The canonical form is: object keys sorted (byte order, recursively), arrays
// kept in their order, no insignificant whitespace, numbers kept exactly as
// their literal text (1.0 and 1 stay distinct), strings re-encoded by
// encoding/json without HTML escaping (so "<" stays "<"; U+2028 and U+2029
// are escaped and invalid UTF-8 becomes U+FFFD, as encoding/json does).
// When an object repeats a key, the last value wins.
package canonical

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
)

// JSON returns the canonical form of one JSON value. It fails when raw is not
// exactly one valid JSON value (surrounding whitespace is allowed).
func JSON(raw []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("canonical: decode JSON: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("canonical: decode JSON: unexpected data after the first value")
	}
	var buf bytes.Buffer
	buf.Grow(len(raw))
	if err := write(&buf, v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Hash returns the hex SHA-256 of raw's canonical JSON form, or of raw's bytes
// as they are when raw is not valid JSON (including the empty string).
func Hash(raw string) string {
	b, err := JSON([]byte(raw))
	if err != nil {
		b = []byte(raw)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// write appends the canonical encoding of a value decoded with UseNumber.
func write(buf *bytes.Buffer, v any) error {
	switch t := v.(type) {
	case nil:
		buf.WriteString("null")
	case bool:
		if t {
			buf.WriteString("true")
		} else {
			buf.WriteString("false")
		}
	case json.Number:
		buf.WriteString(t.String())
	case string:
		return writeString(buf, t)
	case []any:
		buf.WriteByte('[')
		for i, e := range t {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := write(buf, e); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		buf.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := writeString(buf, k); err != nil {
				return err
			}
			buf.WriteByte(':')
			if err := write(buf, t[k]); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
	default:
		return fmt.Errorf("canonical: unexpected decoded type %T", v)
	}
	return nil
}

// writeString appends s as a JSON string without HTML escaping.
func writeString(buf *bytes.Buffer, s string) error {
	var tmp bytes.Buffer
	enc := json.NewEncoder(&tmp)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return fmt.Errorf("canonical: encode string: %w", err)
	}
	buf.Write(bytes.TrimSuffix(tmp.Bytes(), []byte("\n")))
	return nil
}
