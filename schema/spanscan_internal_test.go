package schema

import (
	"errors"
	"testing"
)

func TestSplitEncodedRejectsDamage(t *testing.T) {
	for _, in := range []string{"x", ":a", "3:ab", "-1:", "2a:bb", "1:a1"} {
		if _, err := splitEncoded(in); !errors.Is(err, errEncoding) {
			t.Errorf("splitEncoded(%q) = %v, want errEncoding", in, err)
		}
	}
	if _, err := splitNumbers("1,,2"); !errors.Is(err, errEncoding) {
		t.Errorf("splitNumbers(\"1,,2\") = %v, want errEncoding", err)
	}
}
