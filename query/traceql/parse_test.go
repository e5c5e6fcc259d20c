package traceql

import (
	"strconv"
	"strings"
	"testing"
)

// TestParseShapes: each query parses into the tree written beside it
// (show's rendering), with Tempo's precedence.
func TestParseShapes(t *testing.T) {
	for _, tc := range []struct{ q, want string }{
		{`{}`, `{}`},
		{`{ status = error }`, `{(status = error)}`},
		{`{ span.gen_ai.tool.name = "x" && .a > 1.5 }`, `{((span.gen_ai.tool.name = "x") && (.a > 1.5))}`},
		// && and || share one precedence, left to right, as in Tempo.
		{`{ .a = 1 || .b = 2 && .c = 3 }`, `{(((.a = 1) || (.b = 2)) && (.c = 3))}`},
		{`{ 1 < .a }`, `{(.a > 1)}`},
		{`{ duration > 1.5s && duration <= 2m }`, `{((duration > 1.5s) && (duration <= 2m0s))}`},
		{`{ traceDuration > 1h }`, `{(trace:duration > 1h0m0s)}`},
		{`{ span."a key" = nil }`, `{(span.a key = nil)}`},
		{`{ span.http.url-path = "/" }`, `{(span.http.url-path = "/")}`},
		{`{ !(.a = 1) }`, `{!(.a = 1)}`},
		{`{ trace:outcome.helpful = "pass" }`, `{(trace:outcome.helpful = "pass")}`},
		{`{ content contains "отменить" }`, `{(content contains "отменить")}`},
		// Structural operators bind tighter than && and ||.
		{`{ .a } && { .b } >> { .c }`, `({.a} && ({.b} >> {.c}))`},
		{`{ .a } >> { .b } ~ { .c }`, `(({.a} >> {.b}) ~ {.c})`},
		{`{ .a } !~ { .b }`, `({.a} !~ {.b})`},
		{`{ .a } then { .b }`, `({.a} then {.b})`},
		{`({ .a } || { .b }) > { .c }`, `(({.a} || {.b}) > {.c})`},
		{`{ } | by(tool) | count() > 2 | select(cost)`, `{} | by(tool) | count() > 2 | select(cost)`},
		{`{ } | avg(duration) > 20ms`, `{} | avg(duration) > 20ms`},
		{`{ tool = "w" } | quantile_over_time(duration, .5, .95) by (tool)`, `{(tool = "w")} | quantile_over_time(duration, 0.5, 0.95) by (tool)`},
		{"{ .a = `raw\\n` } // a comment", "{(.a = \"raw\\\\n\")}"},
		{`{ .a = 1 } /* block */ | rate()`, `{(.a = 1)} | rate()`},
	} {
		q, err := Parse(tc.q, Limits{})
		if err != nil {
			t.Errorf("%s: %v", tc.q, err)
			continue
		}
		if got := show(q); got != tc.want {
			t.Errorf("%s\n got %s\nwant %s", tc.q, got, tc.want)
		}
	}
}

// TestParseErrors: each bad query is refused at the position of the text
// at fault, saying what is wrong.
func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		q    string
		pos  int
		want string
	}{
		{``, 0, "empty query"},
		{`{ status = }`, 11, "expected a field or a value"},
		{`{ status = 2 }`, 11, "status is a status"},
		{`{ status = "bad" }`, 11, "status is ok, error or unset"},
		{`{ duration > "x" }`, 13, "duration"},
		{`{ duration > 5 }`, 13, "compare it with a duration"},
		{`{ cost > 1s }`, 9, "cost is a number"},
		{`{ .a =~ "(" }`, 8, "regular expression"},
		{`{ .a > nil }`, 5, "nil compares with = or != only"},
		{`{ .a = .b }`, 7, "must be a constant"},
		{`{ .a = 1 = 2 }`, 9, "do not chain"},
		{`{ name }`, 2, "not a condition"},
		{`{ foo = 1 }`, 2, "unknown field"},
		{`{ trace.x = 1 }`, 2, "unknown scope"},
		{`{ .a = 1 `, 9, "expected }"},
		{`{ .a = "x }`, 7, "string not closed"},
		{`{ duration > 5parsecs }`, 14, "unknown duration unit"},
		{`{ .a = 1 } | count()`, 20, "needs a comparison"},
		{`{ .a = 1 } | avg(name) > 1`, 17, "needs a number or a duration"},
		{`{ .a = 1 } | rate() | count() > 1`, 22, "must end the query"},
		{`{ } | quantile_over_time(duration, 95)`, 35, "not between 0 and 1"},
		{`{ } | frobnicate()`, 6, "unknown pipeline stage"},
		{`{ .a = 1 } }`, 11, "unexpected"},
		{`{ .a = 1 } && 3`, 14, "expected a span set"},
		{strings.Repeat("(", 100) + "{}" + strings.Repeat(")", 100), 64, "nested deeper than 64"},
		{strings.Repeat("{ .a = 1 } && ", 40) + "{}", 0, "filters, over the limit of 32"},
	} {
		_, err := Parse(tc.q, Limits{})
		e, ok := err.(*Error)
		if !ok {
			t.Errorf("%q: %v, want an *Error", tc.q, err)
			continue
		}
		if e.Pos != tc.pos || !strings.Contains(e.Msg, tc.want) {
			t.Errorf("%q: at %d %q, want at %d %q", tc.q, e.Pos, e.Msg, tc.pos, tc.want)
		}
	}
	if _, err := Parse(strings.Repeat(" ", 101), Limits{MaxLength: 100}); err == nil || !strings.Contains(err.Error(), "over the limit of 100") {
		t.Errorf("a query over MaxLength: %v", err)
	}
	if _, err := Parse("{ .a = 1 }"+strings.Repeat(" ", 90), Limits{MaxLength: 100}); err != nil {
		t.Errorf("a query of exactly MaxLength: %v", err)
	}
}

// FuzzParse: no input panics the parser or the evaluator, and every error
// points inside the query (or just past its end).
func FuzzParse(f *testing.F) {
	for _, s := range []string{`{ .a = 1 } >> { status = error } | by(tool) | count() > 1`, `{ content contains "x" } then { }`,
		`{ span."a b" =~ "x.*" || !(duration > 1s) } | quantile_over_time(duration, .9) by (tool)`, `({ } ~ { }) !<< { }`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q, err := Parse(s, Limits{})
		if err != nil {
			e, ok := err.(*Error)
			if !ok || e.Pos < 0 || e.Pos > len(s) {
				t.Fatalf("%q: %v", s, err)
			}
			return
		}
		p := NewPlan(q)
		spans := []Span{{ID: "a", Conds: ^uint64(0), Values: make([]Value, len(p.Fields))},
			{ID: "b", Parent: "a", Start: 5, End: 9, Values: make([]Value, len(p.Fields))}}
		p.Eval(spans)
	})
}

// TestEvalStructure: the structural operators over a hand-drawn tree,
// each expected set worked out from the drawing.
//
//	r (A)
//	├─ x (B)
//	│  └─ y (B)        y: starts at 30, after x (A? no) ends
//	└─ z (A, B)
func TestEvalStructure(t *testing.T) {
	spans := []Span{
		{ID: "r", Start: 0, End: 100, Conds: 1},
		{ID: "x", Parent: "r", Start: 10, End: 20, Conds: 2},
		{ID: "y", Parent: "x", Start: 30, End: 40, Conds: 2},
		{ID: "z", Parent: "r", Start: 50, End: 60, Conds: 3},
	}
	for _, tc := range []struct {
		q    string
		want string
	}{
		{`{ .a } >> { .b }`, "x y z"},
		{`{ .a } > { .b }`, "x z"},
		{`{ .a } !> { .b }`, "y"},
		{`{ .a } !>> { .b }`, ""},
		{`{ .b } < { .a }`, "r"},
		{`{ .b } << { .a }`, "r"},
		{`{ .b } !<< { .a }`, "z"},
		{`{ .a } ~ { .b }`, "x"},
		{`{ .b } ~ { .b }`, "x z"},
		{`{ .a } !~ { .b }`, "y z"},
		{`{ .b } then { .a }`, "z"},
		{`{ .a } && { .b }`, "r x y z"},
		{`{ .a && .b }`, "z"},
		{`{ .a } | count() > 2`, ""},
		{`{ .b } | count() > 2`, "x y z"},
	} {
		q, err := Parse(tc.q, Limits{})
		if err != nil {
			t.Fatalf("%s: %v", tc.q, err)
		}
		p := NewPlan(q)
		// Name the conditions' bits: .a is bit 0, .b bit 1, whatever their
		// order in the query.
		remapped := make([]Span, len(spans))
		for i, s := range spans {
			s.Values = make([]Value, len(p.Fields))
			var bits uint64
			for ci, c := range p.Conds {
				if name := c.(*Attr).Name; (name == "a" && s.Conds&1 != 0) || (name == "b" && s.Conds&2 != 0) {
					bits |= 1 << ci
				}
			}
			s.Conds = bits
			remapped[i] = s
		}
		var got []string
		for _, r := range p.Eval(remapped) {
			for _, i := range r.Spans {
				got = append(got, remapped[i].ID)
			}
		}
		if g := strings.Join(got, " "); g != tc.want {
			t.Errorf("%s: %q, want %q", tc.q, g, tc.want)
		}
	}
}

// show renders a query's tree with every grouping explicit.
func show(q *Query) string {
	var b strings.Builder
	var set func(s Spanset)
	var expr func(e Expr)
	expr = func(e Expr) {
		switch e := e.(type) {
		case *Binary:
			b.WriteString("(")
			expr(e.L)
			b.WriteString(" " + e.Op.String() + " ")
			expr(e.R)
			b.WriteString(")")
		case *Not:
			b.WriteString("!")
			expr(e.X)
		case *Literal:
			switch e.Type {
			case TString:
				b.WriteString(`"` + strings.ReplaceAll(e.Str, `\`, `\\`) + `"`)
			case TNumber:
				b.WriteString(strconvF(e.Num))
			case TDuration:
				b.WriteString(e.Dur.String())
			case TBool:
				b.WriteString(map[bool]string{true: "true", false: "false"}[e.Bool])
			default:
				b.WriteString(map[Type]string{TNil: "nil"}[e.Type] + e.Str)
			}
		default:
			b.WriteString(fieldName(e))
		}
	}
	set = func(s Spanset) {
		switch s := s.(type) {
		case *Filter:
			b.WriteString("{")
			if s.Cond != nil {
				expr(s.Cond)
			}
			b.WriteString("}")
		case *SetOp:
			b.WriteString("(")
			set(s.L)
			b.WriteString(" " + s.Op.String() + " ")
			set(s.R)
			b.WriteString(")")
		}
	}
	set(q.Spans)
	fields := func(es []Expr) string {
		var parts []string
		for _, e := range es {
			parts = append(parts, fieldName(e))
		}
		return strings.Join(parts, ", ")
	}
	stages := append([]Stage{}, q.Stages...)
	if q.Metrics != nil {
		stages = append(stages, q.Metrics)
	}
	for _, st := range stages {
		b.WriteString(" | ")
		switch st := st.(type) {
		case *By:
			b.WriteString("by(" + fields(st.Exprs) + ")")
		case *Select:
			b.WriteString("select(" + fields(st.Exprs) + ")")
		case *Coalesce:
			b.WriteString("coalesce()")
		case *Aggregate:
			arg := ""
			if st.Arg != nil {
				arg = fieldName(st.Arg)
			}
			b.WriteString(st.Fn + "(" + arg + ") " + st.Op.String() + " ")
			expr(st.Value)
		case *Metrics:
			args := ""
			if st.Arg != nil {
				args = fieldName(st.Arg)
			}
			for _, q := range st.Quantiles {
				args += ", " + strconvF(q)
			}
			b.WriteString(st.Fn + "(" + args + ")")
			if len(st.By) > 0 {
				b.WriteString(" by (" + fields(st.By) + ")")
			}
		}
	}
	return b.String()
}

func strconvF(f float64) string { return formatFloat(f) }

func formatFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
