package ingest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"testing"
)

func TestCanonicalJSON(t *testing.T) {
	cases := []struct {
		name, in, want string
	}{
		{"sorted keys", `{"b":1,"a":2}`, `{"a":2,"b":1}`},
		{"nested and whitespace", " {\n \"z\" : [ 1 , {\"y\":true,\"x\":null} ], \"a\":\"s\" } ",
			`{"a":"s","z":[1,{"x":null,"y":true}]}`},
		{"numbers keep their text", `[1.0, 1, 1e3, -0.50, 12345678901234567890]`, `[1.0,1,1e3,-0.50,12345678901234567890]`},
		{"no html escaping", `{"q":"<a>&\u00e9"}`, `{"q":"<a>&é"}`},
		{"control characters", `"a\u0001\n"`, `"a\u0001\n"`},
		{"duplicate key: last wins", `{"a":1,"a":2}`, `{"a":2}`},
		{"scalar", `"x"`, `"x"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := CanonicalJSON([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
	for _, bad := range []string{``, `{`, `{"a":1} {"b":2}`, `not json`, `[1,]`} {
		if _, err := CanonicalJSON([]byte(bad)); err == nil {
			t.Errorf("CanonicalJSON(%q): want an error", bad)
		}
	}
}

func TestArgsHash(t *testing.T) {
	cases := []struct {
		name, in, want string
	}{
		// sha256sum of `{"city":"Paris","units":"c"}`.
		{"canonical", `{"city":"Paris","units":"c"}`, parisArgsHash},
		{"key order", `{"units":"c","city":"Paris"}`, parisArgsHash},
		{"whitespace", "{\n  \"units\": \"c\",\n  \"city\": \"Paris\"\n}", parisArgsHash},
		// sha256sum of `{"a":[1,{"b":2.50,"c":null}],"z":"x"}`.
		{"nested", `{"z":"x","a":[1,{"c":null,"b":2.50}]}`, "b0c76d59539d199f054beb082b01d35d5189ba24d9752669d11dd3861f1803c6"},
		// sha256sum of the raw bytes `not json {`.
		{"not JSON: raw bytes", `not json {`, "c3f07c17117dc1953b6b514cc4e816c00a33fb6cbbe66cbb31e5e22cd1a05fd0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := ArgsHash(tc.in); got != tc.want {
				t.Errorf("ArgsHash(%q) = %s, want %s", tc.in, got, tc.want)
			}
		})
	}
}

// canonicalReference is the definition CanonicalJSON implements in one pass:
// decode with encoding/json (UseNumber) into any, re-encode with sorted keys.
func canonicalReference(raw []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("data after the first value")
	}
	return appendReference(nil, v), nil
}

func appendReference(b []byte, v any) []byte {
	switch t := v.(type) {
	case nil:
		return append(b, "null"...)
	case bool:
		return strconv.AppendBool(b, t)
	case json.Number:
		return append(b, t...)
	case string:
		return appendJSONString(b, t)
	case []any:
		b = append(b, '[')
		for i, e := range t {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendReference(b, e)
		}
		return append(b, ']')
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, k)
			b = append(b, ':')
			b = appendReference(b, t[k])
		}
		return append(b, '}')
	}
	panic(fmt.Sprintf("unexpected %T", v))
}

var canonicalSeeds = []string{
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
	`{`,
	`[1] 2`,
}

func TestCanonicalJSONMatchesReference(t *testing.T) {
	for _, in := range canonicalSeeds {
		checkCanonical(t, []byte(in))
	}
}

func FuzzCanonicalJSON(f *testing.F) {
	for _, s := range canonicalSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(checkCanonical)
}

func checkCanonical(t *testing.T, in []byte) {
	want, wantErr := canonicalReference(in)
	got, err := CanonicalJSON(in)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("CanonicalJSON(%q): error %v, reference error %v", in, err, wantErr)
	}
	if err == nil && !bytes.Equal(got, want) {
		t.Fatalf("CanonicalJSON(%q) = %s, reference %s", in, got, want)
	}
	if err == nil {
		again, err := CanonicalJSON(got)
		if err != nil || !bytes.Equal(again, got) {
			t.Fatalf("not idempotent: %s then %s (%v)", got, again, err)
		}
	}
}
