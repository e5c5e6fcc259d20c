package safety

import (
	"slices"
	"strings"
	"testing"
)

// TestVocabularies: each list names every value once, and each parser
// takes exactly the names of its list (case and surrounding space aside)
// and nothing else.
func TestVocabularies(t *testing.T) {
	for _, c := range []struct {
		name  string
		names []string
		parse func(string) (string, bool)
		bad   []string
	}{
		{"statuses", strs(Statuses()), func(s string) (string, bool) { st, ok := ParseStatus(s); return string(st), ok },
			[]string{"", "failed", "read", "o k"}},
		{"effects", strs(Effects()), func(s string) (string, bool) { e, ok := ParseEffect(s); return string(e), ok },
			[]string{"", "write", "ok", "non-idempotent"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if sorted := slices.Compact(slices.Sorted(slices.Values(c.names))); len(sorted) != len(c.names) {
				t.Errorf("%v names a value twice", c.names)
			}
			for _, n := range c.names {
				for _, in := range []string{n, "  " + n + "\t", strings.ToUpper(n)} {
					if got, ok := c.parse(in); !ok || got != n {
						t.Errorf("parse %q = %q, %v; want %q", in, got, ok, n)
					}
				}
			}
			for _, in := range c.bad {
				if got, ok := c.parse(in); ok {
					t.Errorf("parse %q = %q, ok; want refused", in, got)
				}
			}
		})
	}
	if kinds := Kinds(); len(slices.Compact(slices.Sorted(slices.Values(kinds)))) != len(kinds) {
		t.Errorf("Kinds() %v names a kind twice", kinds)
	}
	// A refused effect is unknown, as Policy.Effect falls back to.
	if e, _ := ParseEffect("write"); e != EffectUnknown {
		t.Errorf("ParseEffect(write) = %q, want unknown", e)
	}
}

// strs converts a list of string-typed values.
func strs[T ~string](vs []T) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	return out
}
