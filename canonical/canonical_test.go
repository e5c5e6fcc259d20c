package canonical

import (
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
		{"keys sorted by bytes, upper case first", `{"b":1,"B":2,"a":3}`, `{"B":2,"a":3,"b":1}`},
		{"last duplicate key wins", `{"a":1,"a":2}`, `{"a":2}`},
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
