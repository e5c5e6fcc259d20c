package traceql

import (
	"math"
	"slices"
	"strconv"
)

// Plan is a query laid out for evaluation: its filters and its atomic
// conditions numbered (a span's match masks have a bit for each), and
// the fields whose values the pipeline reads.
type Plan struct {
	Query *Query
	// Filters are the query's { } filters in the order they are written:
	// filter i is bit i of Span.Filters.
	Filters []*Filter
	// Conds are the atomic conditions (comparisons, boolean fields) of
	// every filter in order: condition i is bit i of Span.Conds.
	Conds []Expr
	// Fields are the fields the pipeline reads (aggregates' arguments,
	// by and select, a metrics function's argument and labels), without
	// repeats: field i is Span.Values[i].
	Fields []Expr

	conds  map[Expr]int
	fields map[string]int
}

// NewPlan lays out q.
func NewPlan(q *Query) *Plan {
	p := &Plan{Query: q, conds: map[Expr]int{}, fields: map[string]int{}}
	p.walk(q.Spans)
	for _, st := range q.Stages {
		switch st := st.(type) {
		case *Aggregate:
			if st.Arg != nil {
				p.field(st.Arg)
			}
		case *By:
			for _, e := range st.Exprs {
				p.field(e)
			}
		case *Select:
			for _, e := range st.Exprs {
				p.field(e)
			}
		}
	}
	if m := q.Metrics; m != nil {
		if m.Arg != nil {
			p.field(m.Arg)
		}
		for _, e := range m.By {
			p.field(e)
		}
	}
	return p
}

func (p *Plan) walk(s Spanset) {
	switch s := s.(type) {
	case *Filter:
		p.Filters = append(p.Filters, s)
		if s.Cond != nil {
			p.atoms(s.Cond)
		}
	case *SetOp:
		p.walk(s.L)
		p.walk(s.R)
	}
}

func (p *Plan) atoms(e Expr) {
	switch e := e.(type) {
	case *Binary:
		if e.Op.Logical() {
			p.atoms(e.L)
			p.atoms(e.R)
			return
		}
	case *Not:
		p.atoms(e.X)
		return
	case *Literal:
		return // true or false: no condition to read
	}
	p.conds[e] = len(p.Conds)
	p.Conds = append(p.Conds, e)
}

func (p *Plan) field(e Expr) {
	k := fieldName(e)
	if _, ok := p.fields[k]; ok {
		return
	}
	p.fields[k] = len(p.Fields)
	p.Fields = append(p.Fields, e)
}

// FieldIndex is the index in Fields (and Span.Values) of e.
func (p *Plan) FieldIndex(e Expr) int { return p.fields[fieldName(e)] }

// CondIndex is the index in Conds (and the bit of Span.Conds) of an
// atomic condition.
func (p *Plan) CondIndex(e Expr) int { return p.conds[e] }

// FieldName is how a field is written in a query (span.x, resource.y,
// cost, trace:outcome.z): the label of its values in results.
func FieldName(e Expr) string { return fieldName(e) }

// NeedsTree reports whether the query relates spans through spans no
// filter matched (>>, <<, !>>, !<<): evaluating it needs every span's
// parent. The other structural operators relate matched spans only.
func (p *Plan) NeedsTree() bool { return needsTree(p.Query.Spans) }

func needsTree(s Spanset) bool {
	op, ok := s.(*SetOp)
	if !ok {
		return false
	}
	switch op.Op {
	case SetDesc, SetAnc, SetNotDesc, SetNotAnc:
		return true
	}
	return needsTree(op.L) || needsTree(op.R)
}

// Span is one span of a trace as Eval reads it.
type Span struct {
	ID, Parent string
	Start, End uint64 // Unix nanoseconds
	Duration   uint64 // nanoseconds
	// Conds has bit i set when Plan.Conds[i] holds for the span.
	Conds uint64
	// Values are the span's values of Plan.Fields.
	Values []Value
}

// Value is a field's value on one span.
type Value struct {
	Present bool
	Str     string // as sent (attributes), or the intrinsic's text
	Num     float64
	IsNum   bool // Num holds the value (a number, or nanoseconds for a duration)
}

// Text is the value as text.
func (v Value) Text() string {
	if !v.Present {
		return ""
	}
	if v.Str != "" || !v.IsNum {
		return v.Str
	}
	return strconv.FormatFloat(v.Num, 'g', -1, 64)
}

// Spanset is one result of a query in a trace: its spans (indices into
// the trace's spans, in order) and, after by(), the values it was grouped
// by.
type Result struct {
	Spans []int
	By    []Value
}

// Eval evaluates the query's span sets and pipeline over one trace's
// spans: the span sets that remain, none when the trace does not match.
func (p *Plan) Eval(spans []Span) []Result {
	matched := p.eval(p.Query.Spans, spans, &evalCtx{spans: spans})
	if len(matched) == 0 {
		return nil
	}
	sets := []Result{{Spans: matched}}
	for _, st := range p.Query.Stages {
		switch st := st.(type) {
		case *By:
			sets = p.by(sets, st, spans)
		case *Aggregate:
			sets = slices.DeleteFunc(sets, func(r Result) bool { return !p.aggregate(st, r, spans) })
		case *Coalesce:
			if len(sets) > 1 {
				var all []int
				for _, r := range sets {
					all = append(all, r.Spans...)
				}
				slices.Sort(all)
				sets = []Result{{Spans: slices.Compact(all)}}
			}
		}
		if len(sets) == 0 {
			return nil
		}
	}
	return sets
}

// evalCtx holds what structural operators build once per trace.
type evalCtx struct {
	spans    []Span
	byID     map[string]int
	children map[string][]int
}

func (c *evalCtx) index() {
	if c.byID != nil {
		return
	}
	c.byID = make(map[string]int, len(c.spans))
	c.children = map[string][]int{}
	for i, s := range c.spans {
		c.byID[s.ID] = i
		c.children[s.Parent] = append(c.children[s.Parent], i)
	}
}

// parentOf is the index of span i's parent, -1 for none (a root, or a
// parent not stored).
func (c *evalCtx) parentOf(i int) int {
	if j, ok := c.byID[c.spans[i].Parent]; ok && c.spans[i].Parent != "" && j != i {
		return j
	}
	return -1
}

// eval is the sorted indices of the spans of s.
func (p *Plan) eval(s Spanset, spans []Span, c *evalCtx) []int {
	switch s := s.(type) {
	case *Filter:
		var out []int
		for i := range spans {
			if s.Cond == nil || p.holds(s.Cond, spans[i].Conds) {
				out = append(out, i)
			}
		}
		return out
	case *SetOp:
		l := p.eval(s.L, spans, c)
		switch s.Op {
		case SetAnd:
			if len(l) == 0 {
				return nil
			}
			r := p.eval(s.R, spans, c)
			if len(r) == 0 {
				return nil
			}
			return union(l, r)
		case SetOr:
			return union(l, p.eval(s.R, spans, c))
		}
		r := p.eval(s.R, spans, c)
		if len(r) == 0 || (len(l) == 0 && !s.Op.Negated()) {
			return nil
		}
		return p.relate(s.Op, l, r, c)
	}
	return nil
}

// relate keeps the spans of r that stand in op's relation to a span of l
// (or, negated, to none).
func (p *Plan) relate(op SetOpKind, l, r []int, c *evalCtx) []int {
	c.index()
	inL := make(map[int]bool, len(l))
	for _, i := range l {
		inL[i] = true
	}
	var test func(j int) bool
	switch op {
	case SetChild, SetNotChild:
		test = func(j int) bool { pj := c.parentOf(j); return pj >= 0 && inL[pj] }
	case SetDesc, SetNotDesc:
		test = func(j int) bool {
			seen := 0
			for a := c.parentOf(j); a >= 0 && seen <= len(c.spans); a = c.parentOf(a) {
				if inL[a] {
					return true
				}
				seen++ // a cycle of bad parent ids ends here
			}
			return false
		}
	case SetParent, SetNotParent:
		test = func(j int) bool {
			for _, k := range c.children[c.spans[j].ID] {
				if inL[k] && k != j {
					return true
				}
			}
			return false
		}
	case SetAnc, SetNotAnc:
		anc := map[int]bool{}
		for _, i := range l {
			seen := 0
			for a := c.parentOf(i); a >= 0 && seen <= len(c.spans); a = c.parentOf(a) {
				anc[a] = true
				seen++
			}
		}
		test = func(j int) bool { return anc[j] }
	case SetSibling, SetNotSibling:
		test = func(j int) bool {
			parent := c.spans[j].Parent
			if parent == "" {
				return false
			}
			for _, k := range c.children[parent] {
				if k != j && inL[k] {
					return true
				}
			}
			return false
		}
	case SetThen:
		var firstEnd uint64 = math.MaxUint64
		for _, i := range l {
			firstEnd = min(firstEnd, c.spans[i].End)
		}
		test = func(j int) bool { return c.spans[j].Start >= firstEnd }
	}
	negated := op.Negated()
	var out []int
	for _, j := range r {
		if test(j) != negated {
			out = append(out, j)
		}
	}
	return out
}

// union merges two sorted index lists.
func union(a, b []int) []int {
	out := make([]int, 0, len(a)+len(b))
	out = append(append(out, a...), b...)
	slices.Sort(out)
	return slices.Compact(out)
}

// holds evaluates a filter's condition from a span's condition bits.
func (p *Plan) holds(e Expr, bits uint64) bool {
	switch e := e.(type) {
	case *Binary:
		switch e.Op {
		case OpAnd:
			return p.holds(e.L, bits) && p.holds(e.R, bits)
		case OpOr:
			return p.holds(e.L, bits) || p.holds(e.R, bits)
		}
	case *Not:
		return !p.holds(e.X, bits)
	case *Literal:
		return e.Type == TBool && e.Bool
	}
	return bits&(1<<p.conds[e]) != 0
}

// by splits each span set by the values of st's fields.
func (p *Plan) by(sets []Result, st *By, spans []Span) []Result {
	var out []Result
	for _, r := range sets {
		groups := map[string]int{}
		for _, i := range r.Spans {
			key := make([]Value, len(st.Exprs))
			var k []byte
			for n, e := range st.Exprs {
				v := spans[i].Values[p.FieldIndex(e)]
				key[n] = v
				k = strconv.AppendBool(k, v.Present)
				k = strconv.AppendQuote(k, v.Text())
			}
			g, ok := groups[string(k)]
			if !ok {
				g = len(out)
				groups[string(k)] = g
				out = append(out, Result{By: key})
			}
			out[g].Spans = append(out[g].Spans, i)
		}
	}
	return out
}

// aggregate reports whether a span set passes an aggregate's comparison.
// Spans without a numeric value of the field do not count; an average,
// minimum or maximum of none fails.
func (p *Plan) aggregate(st *Aggregate, r Result, spans []Span) bool {
	var x float64
	switch st.Fn {
	case "count":
		x = float64(len(r.Spans))
	default:
		n, sum, lo, hi := 0, 0.0, math.Inf(1), math.Inf(-1)
		fi := p.FieldIndex(st.Arg)
		for _, i := range r.Spans {
			v := spans[i].Values[fi]
			if !v.Present || !v.IsNum {
				continue
			}
			n++
			sum += v.Num
			lo, hi = min(lo, v.Num), max(hi, v.Num)
		}
		switch st.Fn {
		case "sum":
			x = sum
		case "avg", "min", "max":
			if n == 0 {
				return false
			}
			x = map[string]float64{"avg": sum / float64(n), "min": lo, "max": hi}[st.Fn]
		}
	}
	want := st.Value.Num
	if st.Value.Type == TDuration {
		want = float64(st.Value.Dur)
	}
	return Compare(st.Op, x, want)
}

// Compare applies an ordering or equality operator to two numbers.
func Compare(op Op, x, y float64) bool {
	switch op {
	case OpEq:
		return x == y
	case OpNeq:
		return x != y
	case OpGt:
		return x > y
	case OpGte:
		return x >= y
	case OpLt:
		return x < y
	case OpLte:
		return x <= y
	}
	return false
}
