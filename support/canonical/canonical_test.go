package canonical

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"testing"
)

func TestJSON(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"keys sorted", `{"b":2,"a":1}`, `{"a":1,"b":2}`},
		{"nested objects sorted recursively", `{"z":{"y":1,"x":[{"d":4,"c":3}]},"a":null}`, `{"a":null,"z":{"x":[{"c":3,"d":4}],"y":1}}`},
		{"arrays keep their order", `[3,1,2,"b","a"]`, `[3,1,2,"b","a"]`},
		{"whitespace removed", " {\n\t\"a\" : [ 1 , 2 ] ,\r\n \"b\" : true } \n", `{"a":[1,2],"b":true}`},
		{"numbers kept as literal text", `{"a":1.0,"b":1,"c":1e2,"d":-0.50,"e":12345678901234567890123}`, `{"a":1.0,"b":1,"c":1e2,"d":-0.50,"e":12345678901234567890123}`},
		{"unicode kept as UTF-8 (\"city\" < \"cjk\": i < j)", `{"city":"Zürich","emoji":"🐈","cjk":"東京"}`, `{"city":"Zürich","cjk":"東京","emoji":"🐈"}`},
		{"unicode escapes decoded", `{"a":"\u00fc\u6771"}`, `{"a":"ü東"}`},
		{"HTML characters not escaped", `{"q":"<a href=\"x\">&</a>"}`, `{"q":"<a href=\"x\">&</a>"}`},
		{"control characters escaped", `{"a":"line\nbreak\ttab"}`, `{"a":"line\nbreak\ttab"}`},
		{"other control characters as \\u00XX", `"a\u0001\b\f"`, `"a\u0001\b\f"`},
		{"U+2028 and U+2029 escaped, raw or not", "[\"\u2028\",\"\\u2029\"]", `["\u2028","\u2029"]`},
		{"surrogate pair joined, lone surrogate replaced", `"\ud83d\ude00\ud800"`, "\"😀\uFFFD\""},
		{"invalid UTF-8 replaced", "\"bad \xff\"", "\"bad \uFFFD\""},
		{"escaped solidus decoded", `"a\/b"`, `"a/b"`},
		{"keys sorted by bytes, upper case first", `{"b":1,"B":2,"a":3}`, `{"B":2,"a":3,"b":1}`},
		{"last duplicate key wins", `{"a":1,"a":2}`, `{"a":2}`},
		{"duplicate keys compared decoded", `{"\u0061":1,"b":0,"a":2}`, `{"a":2,"b":0}`},
		{"scalar string", `"hello"`, `"hello"`},
		{"scalar number", ` 42 `, `42`},
		{"null", `null`, `null`},
		{"empty containers", `{"a":{},"b":[]}`, `{"a":{},"b":[]}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := JSON([]byte(tc.in))
			if err != nil {
				t.Fatalf("JSON(%q): %v", tc.in, err)
			}
			if string(got) != tc.want {
				t.Errorf("JSON(%q) = %s, want %s", tc.in, got, tc.want)
			}
		})
	}
}

func TestJSONRejectsInvalid(t *testing.T) {
	for _, in := range []string{``, `   `, `{`, `{"a":1} {"b":2}`, `{"a":1}x`, `hello`, `{'a':1}`, `[1,]`} {
		if got, err := JSON([]byte(in)); err == nil {
			t.Errorf("JSON(%q) = %s, want an error", in, got)
		}
	}
}

func TestHash(t *testing.T) {
	// Expected digests computed outside Go with:
	//   printf '%s' 'TEXT' | sha256sum
	// where TEXT is the canonical form (for JSON) or the raw text (for non-JSON).
	const (
		sumAB      = "43258cff783fe7036d8a43033f830adfc60ec037382473548ac742b888292777" // {"a":1,"b":2}
		sumSearch  = "41694c00fa84c49e916c32d98e6ded15f55e3280582010ec74b64816492b9d19" // {"limit":10,"q":"hotels in Lisbon"}
		sumEmpty   = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" // (nothing)
		sumNotJSON = "c3f07c17117dc1953b6b514cc4e816c00a33fb6cbbe66cbb31e5e22cd1a05fd0" // not json {
		sumOnePt0  = "c29a44abc114a1d75486434c013102c9e736f526b4fd19658d9492b7b224de6d" // {"a":1.0}
		sumOne     = "015abd7f5cc57a2dd94b7590f04ad8084273905ee33ec5cebeae62276a97f862" // {"a":1}
		sumNested  = "b0c76d59539d199f054beb082b01d35d5189ba24d9752669d11dd3861f1803c6" // {"a":[1,{"b":2.50,"c":null}],"z":"x"}
		sumLineSep = "41f286a101d6e897f62079f71ddbcd61bf2f2bd262636a5cf2811bec55e26033" // {"a":"x\u2028y"}
	)
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"sorted input", `{"a":1,"b":2}`, sumAB},
		{"key order does not matter", `{"b":2,"a":1}`, sumAB},
		{"whitespace does not matter", "{ \"b\" : 2,\n  \"a\" : 1 }", sumAB},
		{"search arguments", `{"q":"hotels in Lisbon","limit":10}`, sumSearch},
		{"empty string hashed as-is", ``, sumEmpty},
		{"invalid JSON hashed as-is", `not json {`, sumNotJSON},
		{"1.0 stays 1.0", `{"a":1.0}`, sumOnePt0},
		{"1 stays 1", `{"a":1}`, sumOne},
		{"nested, unsorted", `{"z":"x","a":[1,{"c":null,"b":2.50}]}`, sumNested},
		{"U+2028 hashed escaped", "{\"a\":\"x\u2028y\"}", sumLineSep},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Hash(tc.in); got != tc.want {
				t.Errorf("Hash(%q) = %s, want %s", tc.in, got, tc.want)
			}
		})
	}
	if Hash(`{"a":1.0}`) == Hash(`{"a":1}`) {
		t.Error("1.0 and 1 must hash differently: numbers are compared as literal text")
	}
}

func TestAppendString(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"plain", `hello`, `"hello"`},
		{"quote and backslash", `a"b\c`, `"a\"b\\c"`},
		{"short control escapes", "\b\f\n\r\t", `"\b\f\n\r\t"`},
		{"other control characters", "\x00\x1f", `"\u0000\u001f"`},
		{"no HTML escaping", `<a>&`, `"<a>&"`},
		{"line and paragraph separators", "x\u2028y\u2029", `"x\u2028y\u2029"`},
		{"invalid UTF-8 byte", "a\xffb", `"a\ufffdb"`},
		{"non-ASCII kept", `Zürich 東京`, `"Zürich 東京"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(AppendString([]byte("x:"), tc.in)); got != "x:"+tc.want {
				t.Errorf("AppendString(%q) = %s, want x:%s", tc.in, got, tc.want)
			}
		})
	}
}

// reference is the definition JSON implements in one pass: decode with
// encoding/json (UseNumber) into any, re-encode with sorted keys and
// encoding/json's string encoder without HTML escaping.
func reference(raw []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("data after the first value")
	}
	var buf bytes.Buffer
	writeReference(&buf, v)
	return buf.Bytes(), nil
}

func writeReference(buf *bytes.Buffer, v any) {
	switch t := v.(type) {
	case nil:
		buf.WriteString("null")
	case bool:
		fmt.Fprint(buf, t)
	case json.Number:
		buf.WriteString(t.String())
	case string:
		enc := json.NewEncoder(buf)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(t)           // cannot fail for a string
		buf.Truncate(buf.Len() - 1) // Encode's newline
	case []any:
		buf.WriteByte('[')
		for i, e := range t {
			if i > 0 {
				buf.WriteByte(',')
			}
			writeReference(buf, e)
		}
		buf.WriteByte(']')
	case map[string]any:
		sep := "{"
		for _, k := range slices.Sorted(maps.Keys(t)) {
			buf.WriteString(sep)
			writeReference(buf, k)
			buf.WriteByte(':')
			writeReference(buf, t[k])
			sep = ","
		}
		if sep == "{" {
			buf.WriteByte('{')
		}
		buf.WriteByte('}')
	default:
		panic(fmt.Sprintf("unexpected %T", v))
	}
}

var seeds = []string{
	`{"b":1,"a":2}`,
	`{"a":{"d":[],"c":{}},"b":[{"y":1,"x":2}]}`,
	`"\ud83d\ude00 \ud800 x \udc00 \u00e9\t\/"`,
	"\"bad \xff utf8\"",
	`{"\u0061":1,"a":2}`,
	`{"é":1,"\u00e9":2,"e":3}`,
	`[-0, 1E+2, 0.000e-1]`,
	` [ true , false , null ] `,
	`{"a":1,"a":{"b":2},"a":[3]}`,
	`"\u2028<>&"`,
	"[\"\u2028\",\"\u2029 raw\",\"\x7f\"]",
	`{"\u2029":1,"\u0001":2}`,
	`{`,
	`[1] 2`,
	``,
	// Invalid, each in its own way: the single pass must refuse what
	// json.Valid refuses.
	`[01]`, `1.`, `1e`, `1e+`, `-`, `.5`, `+1`, `-01`, `1.5e3.2`,
	"\"\x01\"", `"\q"`, `"\u12g4"`, `"\u12"`, `"abc`, `"\`,
	`tru`, `nul`, `falsey`, `{"a" 1}`, `{"a":1,}`, `{,}`, `[1 2]`, `[1,,2]`, `{"a":}`, `{1:2}`, `]`,
	"[1]\x00",
}

// TestDepthLimit checks the nesting limit is encoding/json's: 10000 levels
// are valid JSON, 10001 are not.
func TestDepthLimit(t *testing.T) {
	for _, depth := range []int{10000, 10001} {
		in := []byte(strings.Repeat("[", depth) + strings.Repeat("]", depth))
		_, err := JSON(in)
		if valid := json.Valid(in); (err == nil) != valid {
			t.Errorf("depth %d: JSON error %v, json.Valid %v", depth, err, valid)
		}
		checkAgainstReference(t, in)
	}
}

func TestJSONMatchesReference(t *testing.T) {
	for _, in := range seeds {
		checkAgainstReference(t, []byte(in))
	}
}

func FuzzJSON(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(checkAgainstReference)
}

// checkAgainstReference checks that JSON agrees with reference on in (both
// fail, or both give the same bytes) and that its output is a fixed point.
func checkAgainstReference(t *testing.T, in []byte) {
	want, wantErr := reference(in)
	got, err := JSON(in)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("JSON(%q): error %v, reference error %v", in, err, wantErr)
	}
	// A Hasher that hashed another value first hashes this one exactly as
	// the definition does: its kept buffers carry nothing over.
	hashed := want
	if wantErr != nil {
		hashed = in
	}
	var h Hasher
	h.Hash(`{"zz":[1,"\u00e9",{"b":1,"a":2}],"a":"x"}`)
	if got, sum := h.Hash(string(in)), sha256.Sum256(hashed); got != hex.EncodeToString(sum[:]) {
		t.Fatalf("Hasher.Hash(%q) = %s, want the SHA-256 of %q", in, got, hashed)
	}
	if err != nil {
		return
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("JSON(%q) = %s, reference %s", in, got, want)
	}
	again, err := JSON(got)
	if err != nil || !bytes.Equal(again, got) {
		t.Fatalf("not idempotent: %s then %s (%v)", got, again, err)
	}
}

// toolArgs is a tool call's arguments as agents send them: a few keys,
// nested values, one escaped string.
const toolArgs = `{"query":"hotels in Lisbon near the river","filters":{"stars":[4,5],"price_max":250.5,"amenities":["wifi","pool"]},"limit":10,"page_token":null,"note":"line1\nline2"}`

// BenchmarkHash is one call of the package function: what ingest paid per
// tool span before it kept a Hasher.
func BenchmarkHash(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		Hash(toolArgs)
	}
}

// BenchmarkHasher is the reused Hasher ingest keeps per normalizer.
func BenchmarkHasher(b *testing.B) {
	b.ReportAllocs()
	var h Hasher
	for b.Loop() {
		h.Hash(toolArgs)
	}
}
