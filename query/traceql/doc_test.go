package traceql

import (
	"os"
	"strings"
	"testing"
)

// TestIntrinsicsDocumented: docs/search.md names every intrinsic and
// every spelling of it, so the language's reference cannot fall behind.
func TestIntrinsicsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/search.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range Intrinsics() {
		names := append([]string{d.Name}, d.Aliases...)
		for _, n := range names {
			if d.WithArg {
				n += ".<name>"
			}
			if !strings.Contains(string(doc), "`"+n+"`") {
				t.Errorf("docs/search.md does not name the intrinsic `%s`", n)
			}
		}
	}
}
