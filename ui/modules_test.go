package ui

import (
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The UI's ES modules form a graph without cycles, and lib/ is the bottom
// layer: a module under lib/ imports only other lib/ modules, never a page.
// The graph is read from the embedded files, as the browser gets them.

var (
	// staticImport is `import … from '…'` (possibly over several lines)
	// and `import '…'`, at the start of a statement.
	staticImport = regexp.MustCompile(`(?m)^[ \t]*import\b\s*(?:[\w$*{},\s]*?\s*from\s*)?(['"])([^'"\n]+)['"]`)
	// reExport is `export … from '…'`.
	reExport = regexp.MustCompile(`(?m)^[ \t]*export\s*(?:\*|\*\s*as\s+[\w$]+|\{[^}]*\})\s*from\s*(['"])([^'"\n]+)['"]`)
	// dynamicImport is import('…') with a literal path.
	dynamicImport = regexp.MustCompile(`\bimport\(\s*(['"])([^'"\n]+)['"]\s*\)`)
	blockComment  = regexp.MustCompile(`(?s)/\*.*?\*/`)
	lineComment   = regexp.MustCompile(`(?m)^[ \t]*//.*$`)
)

// moduleImports lists the modules src imports, as written.
func moduleImports(src string) []string {
	src = lineComment.ReplaceAllString(blockComment.ReplaceAllString(src, ""), "")
	var out []string
	for _, re := range []*regexp.Regexp{staticImport, reExport, dynamicImport} {
		for _, m := range re.FindAllStringSubmatch(src, -1) {
			out = append(out, m[2])
		}
	}
	return out
}

// resolveImport turns spec, imported by the module at from (a path under
// static/, e.g. "pages/run.js"), into a path under static/; ok is false
// for a bare specifier, which the browser would not resolve.
func resolveImport(from, spec string) (string, bool) {
	switch {
	case strings.HasPrefix(spec, "/static/"):
		return path.Clean(strings.TrimPrefix(spec, "/static/")), true
	case strings.HasPrefix(spec, "./"), strings.HasPrefix(spec, "../"):
		return path.Join(path.Dir(from), spec), true
	}
	return "", false
}

// moduleGraph maps every .js file under static/ to the modules it imports
// (sorted, each once).
func moduleGraph(t *testing.T) map[string][]string {
	t.Helper()
	sub, err := fs.Sub(staticFS, "static")
	if err != nil {
		t.Fatal(err)
	}
	graph := map[string][]string{}
	err = fs.WalkDir(sub, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".js") {
			return err
		}
		b, err := fs.ReadFile(sub, p)
		if err != nil {
			return err
		}
		graph[p] = []string{}
		for _, spec := range moduleImports(string(b)) {
			to, ok := resolveImport(p, spec)
			if !ok {
				t.Errorf("%s imports %q: only relative and /static/ paths resolve in the browser", p, spec)
				continue
			}
			if _, err := fs.Stat(sub, to); err != nil {
				t.Errorf("%s imports %q: %s does not exist", p, spec, to)
				continue
			}
			if !slices.Contains(graph[p], to) {
				graph[p] = append(graph[p], to)
			}
		}
		slices.Sort(graph[p])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The parser must see the imports it is meant to check.
	if !slices.Contains(graph["app.js"], "lib/html.js") || !slices.Contains(graph["app.js"], "pages/run.js") {
		t.Fatalf("app.js imports %v: the import parser missed lib/html.js or pages/run.js", graph["app.js"])
	}
	return graph
}

// importCycles finds the cycles of graph: one for each back edge of a
// depth-first walk from every module in name order, so every strongly
// connected component with more than one module (or a module importing
// itself) is named at least once. Each cycle is a path a → … → a.
func importCycles(graph map[string][]string) [][]string {
	const (
		unseen = iota
		onStack
		done
	)
	state := map[string]int{}
	var stack []string
	var cycles [][]string
	var walk func(m string)
	walk = func(m string) {
		state[m] = onStack
		stack = append(stack, m)
		for _, to := range graph[m] {
			switch state[to] {
			case unseen:
				walk(to)
			case onStack:
				i := slices.Index(stack, to)
				cycles = append(cycles, append(slices.Clone(stack[i:]), to))
			}
		}
		stack = stack[:len(stack)-1]
		state[m] = done
	}
	names := make([]string, 0, len(graph))
	for m := range graph {
		names = append(names, m)
	}
	slices.Sort(names)
	for _, m := range names {
		if state[m] == unseen {
			walk(m)
		}
	}
	return cycles
}

func TestModulesImportCycles(t *testing.T) {
	for _, c := range importCycles(moduleGraph(t)) {
		t.Errorf("import cycle: %s", strings.Join(c, " → "))
	}
}

func TestModulesLibImportsOnlyLib(t *testing.T) {
	for m, imports := range moduleGraph(t) {
		if !strings.HasPrefix(m, "lib/") {
			continue
		}
		for _, to := range imports {
			if !strings.HasPrefix(to, "lib/") {
				t.Errorf("%s imports %s: lib/ modules import only lib/", m, to)
			}
		}
	}
}

// The parser and the cycle finder on known input, so that a regression in
// either cannot make the tests above pass vacuously.
func TestModulesParser(t *testing.T) {
	src := `// import { x } from './commented.js';
/* import './block.js'; */
import { a,
  b } from './a.js';
import * as ns from "../lib/ns.js";
import def, { c } from './def.js';
import './side.js';
export { d } from './d.js';
export * from './all.js';
const s = 'import { no } from "./string-mid-line.js"';
async function f() { return import('./lazy.js'); }
`
	got := moduleImports(src)
	want := []string{"./a.js", "../lib/ns.js", "./def.js", "./side.js", "./d.js", "./all.js", "./lazy.js"}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("imports %q, want %q", got, want)
	}
	if to, _ := resolveImport("pages/run.js", "../lib/html.js"); to != "lib/html.js" {
		t.Errorf("pages/run.js imports ../lib/html.js: resolved to %q", to)
	}
	if to, _ := resolveImport("pages/run.js", "./span.js"); to != "pages/span.js" {
		t.Errorf("pages/run.js imports ./span.js: resolved to %q", to)
	}
	cycles := importCycles(map[string][]string{
		"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": {}, "e": {"e"},
	})
	if len(cycles) != 2 || strings.Join(cycles[0], " ") != "a b c a" || strings.Join(cycles[1], " ") != "e e" {
		t.Errorf("cycles %q, want [a b c a] and [e e]", cycles)
	}
}
