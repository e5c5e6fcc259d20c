package ui

import (
	"fmt"
	"io/fs"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/tallyhq/tally/safety"
	"github.com/tallyhq/tally/schema"
)

// The safety review's vocabularies (step statuses, effect classes, signal
// kinds) are spelled twice: in package safety, and in lib/vocab.js for the
// pages. TestVocab reads lib/vocab.js as the browser gets it and holds its
// lists equal to Go's, value for value and in order; TestVocabOnce holds
// the pages to importing them instead of spelling them again.

// vocabModule is the one module that lists the vocabularies.
const vocabModule = "lib/vocab.js"

// jsExport is `export const NAME =`, at the start of a line.
var jsExport = regexp.MustCompile(`(?m)^export const ([A-Z_]+) = `)

// jsValue is a JS array or object literal of strings, as lib/vocab.js
// writes them: an array's items in order, an object's keys in order with
// their values.
type jsValue struct {
	items []string          // an array's strings; an object's keys
	dict  map[string]string // an object's values, nil for an array
}

// parseExports reads the array and object literals of strings that src
// exports as `export const NAME = [...]` or `= {...}`; other exports are
// left out.
func parseExports(src string) (map[string]jsValue, error) {
	out := map[string]jsValue{}
	for _, m := range jsExport.FindAllStringSubmatchIndex(src, -1) {
		name, rest := src[m[2]:m[3]], src[m[1]:]
		if rest == "" || (rest[0] != '[' && rest[0] != '{') {
			continue
		}
		v, err := parseLiteral(rest)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out[name] = v
	}
	return out, nil
}

// parseLiteral reads the array or object literal src starts with: quoted
// strings (and, in an object, identifiers as keys), commas (a trailing one
// too), comments between them. Anything else is an error, so that a list
// this test cannot read fails it rather than passing unread.
func parseLiteral(src string) (jsValue, error) {
	p := &jsLexer{src: src}
	open := p.next()
	var v jsValue
	closing := "]"
	if open == "{" {
		v.dict, closing = map[string]string{}, "}"
	} else if open != "[" {
		return v, fmt.Errorf("want [ or {, got %q", open)
	}
	for {
		tok := p.next()
		if tok == closing {
			return v, p.err
		}
		item, ok := p.text(tok, v.dict != nil)
		if !ok {
			return v, fmt.Errorf("want a string or %s, got %q", closing, tok)
		}
		if v.dict != nil {
			if _, dup := v.dict[item]; dup {
				return v, fmt.Errorf("key %q twice", item)
			}
			if sep := p.next(); sep != ":" {
				return v, fmt.Errorf("key %q: want :, got %q", item, sep)
			}
			val, ok := p.text(p.next(), false)
			if !ok {
				return v, fmt.Errorf("key %q: want a string value", item)
			}
			v.dict[item] = val
		}
		v.items = append(v.items, item)
		switch sep := p.next(); sep {
		case ",":
		case closing:
			return v, p.err
		default:
			return v, fmt.Errorf("after %q: want , or %s, got %q", item, closing, sep)
		}
	}
}

// jsLexer splits the start of a JS literal into tokens: punctuation,
// quoted strings (kept quoted), identifiers.
type jsLexer struct {
	src string
	err error
}

var (
	jsSpace  = regexp.MustCompile(`^(?:\s+|//[^\n]*|/\*(?s:.*?)\*/)+`)
	jsString = regexp.MustCompile(`^(?:'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*")`)
	jsIdent  = regexp.MustCompile(`^[A-Za-z_$][\w$]*`)
)

// next returns the next token, "" at the end.
func (l *jsLexer) next() string {
	l.src = strings.TrimPrefix(l.src, jsSpace.FindString(l.src))
	tok := jsString.FindString(l.src)
	if tok == "" {
		tok = jsIdent.FindString(l.src)
	}
	if tok == "" && l.src != "" {
		tok = l.src[:1]
	}
	l.src = l.src[len(tok):]
	return tok
}

// text is the string a token stands for: a quoted string's content, or
// an identifier where one may be a key.
func (l *jsLexer) text(tok string, keyOK bool) (string, bool) {
	switch {
	case tok != "" && jsString.FindString(tok) == tok:
		body := tok[1 : len(tok)-1]
		if tok[0] == '\'' {
			// A JS single-quoted string as a Go double-quoted one.
			body = strings.ReplaceAll(strings.ReplaceAll(body, `\'`, `'`), `"`, `\"`)
		}
		s, err := strconv.Unquote(`"` + body + `"`)
		if err != nil {
			l.err = fmt.Errorf("string %s: %w", tok, err)
			return "", false
		}
		return s, true
	case keyOK && jsIdent.MatchString(tok):
		return tok, true
	}
	return "", false
}

// strs converts a list of string-typed values.
func strs[T ~string](vs []T) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	return out
}

// vocabExports reads lib/vocab.js from the embedded files.
func vocabExports(t *testing.T) map[string]jsValue {
	t.Helper()
	b, err := fs.ReadFile(staticFS, "static/"+vocabModule)
	if err != nil {
		t.Fatal(err)
	}
	exports, err := parseExports(string(b))
	if err != nil {
		t.Fatalf("%s: %v", vocabModule, err)
	}
	return exports
}

// goVocabularies are Go's lists, by the name of the array lib/vocab.js
// gives each, with the objects that must have an entry for every value.
func goVocabularies() []struct {
	array   string
	want    []string
	objects []string
} {
	return []struct {
		array   string
		want    []string
		objects []string
	}{
		{"STATUSES", strs(safety.Statuses()), []string{"STATUS_PILL"}},
		{"EFFECTS", strs(safety.Effects()), []string{"EFFECT_PILL"}},
		{"SIGNAL_KINDS", safety.KindNames(), []string{"SIGNAL_HELP", "SIGNAL_MARK"}},
		{"CONFIDENCES", schema.Confidences(), []string{"CONFIDENCE_HELP", "CONFIDENCE_MARK"}},
	}
}

// TestVocab: each list of lib/vocab.js is Go's, the same values in the
// same order, and each object keyed by a vocabulary says something (a
// pill class, a description, a badge) for every value and for no other.
func TestVocab(t *testing.T) {
	exports := vocabExports(t)
	for _, v := range goVocabularies() {
		got, ok := exports[v.array]
		if !ok || got.dict != nil {
			t.Errorf("%s exports no array %s: want %q", vocabModule, v.array, v.want)
			continue
		}
		if !slices.Equal(got.items, v.want) {
			t.Errorf("%s: %s is %q; Go's list is %q (same values, same order)", vocabModule, v.array, got.items, v.want)
		}
		for _, name := range v.objects {
			obj, ok := exports[name]
			if !ok || obj.dict == nil {
				t.Errorf("%s exports no object %s", vocabModule, name)
				continue
			}
			for _, k := range v.want {
				if strings.TrimSpace(obj.dict[k]) == "" {
					t.Errorf("%s: %s has nothing for %s %q", vocabModule, name, v.array, k)
				}
			}
			for _, k := range slices.Sorted(maps.Keys(obj.dict)) {
				if !slices.Contains(v.want, k) {
					t.Errorf("%s: %s has %q, which is not in Go's %s %q", vocabModule, name, k, v.array, v.want)
				}
			}
		}
	}
}

// TestVocabOnce: no other module spells a vocabulary's value as a string
// literal or an object key, so a list cannot grow again beside
// lib/vocab.js. Values that are also ordinary words of the UI (ok, error,
// read, unknown: pill classes, labels) are left out.
func TestVocabOnce(t *testing.T) {
	common := []string{"ok", "error", "read", "unknown", "exact", "corrected", "unpriced", "approximate"}
	var values []string
	for _, v := range goVocabularies() {
		for _, s := range v.want {
			if !slices.Contains(common, s) {
				values = append(values, regexp.QuoteMeta(s))
			}
		}
	}
	spelled := regexp.MustCompile(`['"](` + strings.Join(values, "|") + `)['"]|(?m)(?:^\s*|[{,]\s*)(` + strings.Join(values, "|") + `)\s*:`)
	err := fs.WalkDir(staticFS, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".js") || p == "static/"+vocabModule {
			return err
		}
		b, err := fs.ReadFile(staticFS, p)
		if err != nil {
			return err
		}
		for _, m := range spelled.FindAllStringSubmatch(string(b), -1) {
			t.Errorf("%s spells %q: import it from %s", p, m[1]+m[2], vocabModule)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestVocabParser: the literal parser on known input, so that a
// regression in it cannot make TestVocab pass vacuously.
func TestVocabParser(t *testing.T) {
	src := `// A comment.
import { html } from './html.js';

/** LIST is a list. */
export const LIST = ['a', "b", /* c */ 'it\'s',
  'd', // trailing comma
];

export const OBJ = { a: 'x', 'b-c': "y \"z\"", d: 'w' };
export const NUM = 3;
export function f() { return 1; }
`
	got, err := parseExports(src)
	if err != nil {
		t.Fatal(err)
	}
	if l := got["LIST"]; l.dict != nil || !slices.Equal(l.items, []string{"a", "b", "it's", "d"}) {
		t.Errorf("LIST = %+v", l)
	}
	if o := got["OBJ"]; !slices.Equal(o.items, []string{"a", "b-c", "d"}) || o.dict["b-c"] != `y "z"` || o.dict["d"] != "w" {
		t.Errorf("OBJ = %+v", o)
	}
	if _, ok := got["NUM"]; ok || len(got) != 2 {
		t.Errorf("exports %v: want LIST and OBJ only", slices.Sorted(maps.Keys(got)))
	}
	for _, bad := range []string{
		`export const X = ['a', b];`,           // an identifier in an array
		`export const X = ['a' 'b'];`,          // no comma
		`export const X = { a: 'x', a: 'y' };`, // a key twice
		`export const X = { a: 1 };`,           // not a string
		`export const X = ['a',`,               // unterminated
	} {
		if _, err := parseExports(bad); err == nil {
			t.Errorf("%s: parsed, want an error", bad)
		}
	}
}
