package ingest

import (
	"encoding/base64"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tallyhq/tally/ingest/wire"

	"github.com/tallyhq/tally/support/canonical"
)

// validUTF8 repairs s: every invalid byte sequence becomes U+FFFD. It does
// not allocate when s is already valid.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// truncate cuts a valid UTF-8 string to at most max bytes on a rune boundary
// and appends TruncationMarker. A string of exactly max bytes is kept whole;
// max <= 0 means no limit.
func truncate(s string, max int) (string, bool) {
	if max <= 0 || len(s) <= max {
		return s, false
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + TruncationMarker, true
}

// clean repairs and truncates a string bound for a column or attribute.
func clean(s string, max int) string {
	s, _ = truncate(validUTF8(s), max)
	return s
}

// appendFloatText appends f in the form JavaScript (and pcommon) print it:
// plain decimals between 1e-6 and 1e21, exponent form outside, and NaN,
// Infinity, -Infinity spelled out.
func appendFloatText(b []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(b, "NaN"...)
	case math.IsInf(f, 1):
		return append(b, "Infinity"...)
	case math.IsInf(f, -1):
		return append(b, "-Infinity"...)
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	return strconv.AppendFloat(b, f, format, -1, 64)
}

// appendValueJSON appends v as JSON. String leaves are repaired to valid UTF-8
// and, when maxStr > 0, truncated to maxStr bytes with TruncationMarker.
// Doubles that JSON cannot carry (NaN, ±Inf) become strings; bytes become a
// base64 string.
func appendValueJSON(b []byte, v wire.Value, maxStr int) []byte {
	switch v.Type() {
	case wire.ValueStr:
		s := v.Str()
		if maxStr > 0 && len(s) > maxStr {
			s = clean(s, maxStr)
		}
		return canonical.AppendString(b, s)
	case wire.ValueInt:
		return strconv.AppendInt(b, v.Int(), 10)
	case wire.ValueDouble:
		f := v.Double()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			b = append(b, '"')
			b = appendFloatText(b, f)
			return append(b, '"')
		}
		return appendFloatText(b, f)
	case wire.ValueBool:
		return strconv.AppendBool(b, v.Bool())
	case wire.ValueBytes:
		b = append(b, '"')
		b = base64.StdEncoding.AppendEncode(b, []byte(v.Bytes()))
		return append(b, '"')
	case wire.ValueMap:
		b = append(b, '{')
		for i, e := range v.Map() {
			if i > 0 {
				b = append(b, ',')
			}
			b = canonical.AppendString(b, e.Key)
			b = append(b, ':')
			b = appendValueJSON(b, e.Value, maxStr)
		}
		return append(b, '}')
	case wire.ValueSlice:
		b = append(b, '[')
		for i, e := range v.Slice() {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendValueJSON(b, e.Value, maxStr)
		}
		return append(b, ']')
	}
	return append(b, "null"...)
}

// valueText is the text form of an attribute value: strings as they are,
// bool/int/double in their natural text form, bytes as base64, maps and
// slices as JSON. scratch is reused for the non-string forms. The result may
// still hold invalid UTF-8 (only for strings) and is not truncated.
func valueText(v wire.Value, scratch *[]byte) string {
	switch v.Type() {
	case wire.ValueStr:
		return v.Str()
	case wire.ValueEmpty:
		return ""
	case wire.ValueInt:
		return strconv.FormatInt(v.Int(), 10)
	case wire.ValueBool:
		return strconv.FormatBool(v.Bool())
	case wire.ValueDouble:
		*scratch = appendFloatText((*scratch)[:0], v.Double())
	case wire.ValueBytes:
		return base64.StdEncoding.EncodeToString([]byte(v.Bytes()))
	default:
		*scratch = appendValueJSON((*scratch)[:0], v, 0)
	}
	return string(*scratch)
}
