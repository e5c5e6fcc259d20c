package query

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tallyhq/tally/query/traceql"
)

// dbTables names tables as a store of database db does.
type dbTables struct{}

func (dbTables) Table(name string) string { return "`db`.`" + name + "`" }

// FuzzSearchSQL: whatever the query, its compiled statement carries the
// project and the window, every value of the query reaches ClickHouse as a
// bound parameter (no string of the query is in the SQL text), and each
// ? has its argument.
func FuzzSearchSQL(f *testing.F) {
	for _, s := range []string{`{ span.x = "'; DROP TABLE spans --" }`, `{ content contains "a'b" } >> { name =~ "x" }`,
		`{ .a != nil && resource.service.name = "s" } | by(span.k) | select(.z)`, `{ event.exception.message = "boom" || event:name = "e" }`,
		`{ trace:cost > 1 || cost > 2 } !~ { }`, `{ !(tool = "t") && args != nil }`} {
		f.Add(s)
	}
	since := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		q, err := traceql.Parse(s, traceql.Limits{})
		if err != nil {
			return
		}
		p := traceql.NewPlan(q)
		// Half the inputs compile for a store with a text index.
		c, err := compileSearch(searchTarget{tables: dbTables{}, textIndex: len(s)%2 == 1}, p, "tenant-a", since, since.Add(time.Hour))
		if err != nil {
			if _, ok := err.(*traceql.Error); !ok {
				t.Fatalf("%q: %v", s, err)
			}
			return
		}
		sql, args := searchCandidatesSQL(dbTables{}, spanDedup(len(s)%2 == 0), c, "tenant-a", since, since.Add(time.Hour), &cursor{Ns: 1, Key: "k"}, 10)
		if !strings.Contains(sql, "WHERE project = ? AND start >= ? AND start <= ?") {
			t.Fatalf("%q: no project and window in\n%s", s, sql)
		}
		if n := strings.Count(sql, "?"); n != len(args) {
			t.Fatalf("%q: %d placeholders, %d args\n%s", s, n, len(args), sql)
		}
		projects := 0
		for _, a := range args {
			if a == "tenant-a" {
				projects++
			}
		}
		if want := 1 + strings.Count(sql, "`db`.`content`"); projects < want {
			t.Fatalf("%q: %d project arguments for %d tables read\n%s", s, projects, want, sql)
		}
		// The query's strings never shape the SQL: with every string
		// constant changed, the statement's text is the same.
		for _, lit := range literalsOf(q) {
			lit.Str = "zz"
		}
		c2, err := compileSearch(searchTarget{tables: dbTables{}, textIndex: len(s)%2 == 1}, p, "tenant-a", since, since.Add(time.Hour))
		if err != nil {
			t.Fatalf("%q with its strings changed: %v", s, err)
		}
		if sql2, _ := searchCandidatesSQL(dbTables{}, spanDedup(len(s)%2 == 0), c2, "tenant-a", since, since.Add(time.Hour), &cursor{Ns: 1, Key: "k"}, 10); sql2 != sql {
			t.Fatalf("%q: its strings changed the SQL\n%s\n%s", s, sql, sql2)
		}
		// An attribute's name is an argument too (a name that is a plain
		// word may also be a column's, so only the others are looked for).
		for _, name := range attrNames(q) {
			if strings.Trim(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") != "" && strings.Contains(sql, name) {
				if _, ok := columnAttrs[name]; !ok && name != "service.name" {
					t.Fatalf("%q: the attribute name %q is in the SQL text\n%s", s, name, sql)
				}
			}
		}
	})
}

// literalsOf lists a query's string constants.
func literalsOf(q *traceql.Query) []*traceql.Literal {
	var out []*traceql.Literal
	walkExprs(q, func(e traceql.Expr) {
		if l, ok := e.(*traceql.Literal); ok && l.Type == traceql.TString {
			out = append(out, l)
		}
	})
	return out
}

// attrNames lists the names of a query's attributes.
func attrNames(q *traceql.Query) []string {
	var out []string
	walkExprs(q, func(e traceql.Expr) {
		if a, ok := e.(*traceql.Attr); ok {
			out = append(out, a.Name)
		}
	})
	return out
}

// walkExprs calls visit on every expression of a query's filters.
func walkExprs(q *traceql.Query, visit func(traceql.Expr)) {
	var expr func(e traceql.Expr)
	expr = func(e traceql.Expr) {
		visit(e)
		switch e := e.(type) {
		case *traceql.Binary:
			expr(e.L)
			expr(e.R)
		case *traceql.Not:
			expr(e.X)
		}
	}
	var set func(s traceql.Spanset)
	set = func(s traceql.Spanset) {
		switch s := s.(type) {
		case *traceql.Filter:
			if s.Cond != nil {
				expr(s.Cond)
			}
		case *traceql.SetOp:
			set(s.L)
			set(s.R)
		}
	}
	set(q.Spans)
}

// TestIndexWords: the words of a folded needle that narrow a content
// search through the text index, each lying within one token of any value
// holding the needle.
func TestIndexWords(t *testing.T) {
	for _, tc := range []struct {
		needle string
		want   []string
	}{
		{"duplicate charge", []string{"duplicate", "charge"}},
		{"refund polic", []string{"refund", "polic"}},
		// Split where the index's tokenizer splits: ASCII that is not a
		// letter or digit; other code points belong to words.
		{`{"order":"1234"}`, []string{"order", "1234"}},
		{"ОТМЕНИТЬ Заказ", []string{"отменить", "заказ"}},
		{"退款政策", []string{"退款政策"}},
		{"my_task: sms", []string{"task"}}, // "my" and "sms" are too short to look up
		{"the the", []string{}},
		// Sigmas, and letters lowered otherwise by the server, are left out.
		{"ΠΕΡΙΟΔΟΣ ελεγχου", []string{"ελεγχου"}},
		{"İstanbul Istanbul", []string{"istanbul"}},
		{"µ-law", []string{}},
	} {
		got := indexWords(tc.needle)
		if len(got) == 0 && len(tc.want) == 0 {
			continue
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("indexWords(%q) = %q, want %q", tc.needle, got, tc.want)
		}
	}
	// With a text index, each word narrows the content read; without, none.
	since := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	p := traceql.NewPlan(must(traceql.Parse(`{ content contains "Duplicate charge" }`, traceql.Limits{})))
	for _, index := range []bool{true, false} {
		c, err := compileSearch(searchTarget{tables: dbTables{}, textIndex: index}, p, "p", since, since.Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		cond := c.conds[0]
		likes := strings.Count(cond.q, "lowerUTF8(value) LIKE ?")
		if want := map[bool]int{true: 2, false: 0}[index]; likes != want ||
			index && (!slices.Contains(cond.args, any("%duplicate%")) || !slices.Contains(cond.args, any("%charge%"))) {
			t.Errorf("text index %v: %s %v", index, cond.q, cond.args)
		}
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
