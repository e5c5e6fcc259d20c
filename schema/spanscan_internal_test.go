package schema

import (
	"errors"
	"reflect"
	"testing"
)

func TestSplitEncodedRejectsDamage(t *testing.T) {
	for _, in := range []string{"x", ":a", "3:ab", "-1:", "2a:bb", "1:a1", "[", "]", "['a'", "['a',]", "['a''b']", `['a\']`, `['a\`, "[a]", "['a' ,'b']", "[,'a']"} {
		if _, err := splitEncoded(in); !errors.Is(err, errEncoding) {
			t.Errorf("splitEncoded(%q) = %v, want errEncoding", in, err)
		}
	}
	for _, in := range []string{"1,,2", "[1,2", "[1,,2]", "[1,-2]", "[x]"} {
		if _, err := splitNumbers(in); !errors.Is(err, errEncoding) {
			t.Errorf("splitNumbers(%q) = %v, want errEncoding", in, err)
		}
	}
}

// The text form ClickHouse writes for an Array(String) (toString), read
// back: the escapes of a quoted string, values that look like the syntax;
// and the length-prefixed form.
func TestSplitEncodedReadsTheTextForm(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"[]", []string{}},
		{"", []string{}}, // a column the read left out
		{"['']", []string{""}},
		{"['a','','b']", []string{"a", "", "b"}},
		{`['it\'s','a\\b','\\','\'']`, []string{"it's", `a\b`, `\`, "'"}},
		{`['\b\f\n\r\t\0','x\\\'y']`, []string{"\b\f\n\r\t\x00", `x\'y`}},
		{"['[\\',\\']',',']", []string{"[',']", ","}},
		{"['naïve 🦊']", []string{"naïve 🦊"}},
		{"3:a,b0:2:[]", []string{"a,b", "", "[]"}},
	} {
		got, err := splitEncoded(c.in)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("splitEncoded(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{"[0,18446744073709551615]", "0,18446744073709551615"} {
		if got, err := splitNumbers(in); err != nil || !reflect.DeepEqual(got, []uint64{0, 18446744073709551615}) {
			t.Errorf("splitNumbers(%q) = %v, %v", in, got, err)
		}
	}
}
