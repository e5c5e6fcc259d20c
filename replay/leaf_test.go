package replay

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestLeaf keeps replay a leaf: user tests import it for Player, so it may
// import only the standard library and package canonical (fixture building
// lives in replay/recording, columnar export in replay/columnar).
func TestLeaf(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		ast, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range ast.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			first, _, _ := strings.Cut(path, "/")
			if strings.Contains(first, ".") && path != "github.com/tallyhq/tally/support/canonical" {
				t.Errorf("%s imports %s: replay may import only the standard library and canonical", f, path)
			}
		}
	}
}
