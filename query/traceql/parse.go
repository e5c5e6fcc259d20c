// Package traceql reads tally's query language: Grafana Tempo's TraceQL
// (span sets, attribute and intrinsic conditions, structural operators,
// pipelines and metrics functions) with tally's GenAI intrinsics (cost,
// tokens, agent, model, tool, …), run-level fields (trace:cost,
// trace:task, …), the content intrinsic, the contains operator and the
// then operator. It parses and checks a query into a tree (Parse) and
// evaluates a query's span sets over one trace's spans (Eval); compiling
// the conditions to SQL is package query's, which owns the tables.
package traceql

import (
	"regexp"
	"strings"
)

// Limits bound what Parse accepts.
type Limits struct {
	// MaxLength is the longest query in bytes (0: DefaultMaxLength).
	MaxLength int
	// MaxDepth is the deepest nesting of parentheses, braces, negations
	// and operators (0: DefaultMaxDepth).
	MaxDepth int
}

// The default limits.
const (
	DefaultMaxLength = 16 << 10
	DefaultMaxDepth  = 64
	// MaxFilters is how many { … } filters one query may have: each is a
	// bit of a span's match mask.
	MaxFilters = 32
	// MaxConditions is how many comparisons one query may have.
	MaxConditions = 64
)

// Parse reads and checks a query. A syntax or type error is an *Error
// giving the byte offset of the offending text.
func Parse(src string, lim Limits) (*Query, error) {
	if lim.MaxLength <= 0 {
		lim.MaxLength = DefaultMaxLength
	}
	if lim.MaxDepth <= 0 {
		lim.MaxDepth = DefaultMaxDepth
	}
	if len(src) > lim.MaxLength {
		return nil, errAt(lim.MaxLength, "query is %d bytes, over the limit of %d", len(src), lim.MaxLength)
	}
	if strings.TrimSpace(src) == "" {
		return nil, errAt(0, "empty query: write a span set such as { status = error }")
	}
	toks, err := lex(src)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks, maxDepth: lim.MaxDepth, defs: Intrinsics()}
	q, err := p.query()
	if err != nil {
		return nil, err
	}
	q.Source = src
	if p.filters > MaxFilters {
		return nil, errAt(0, "query has %d { } filters, over the limit of %d", p.filters, MaxFilters)
	}
	if p.conds > MaxConditions {
		return nil, errAt(0, "query has %d conditions, over the limit of %d", p.conds, MaxConditions)
	}
	return q, nil
}

type parser struct {
	toks     []token
	i        int
	depth    int
	maxDepth int
	defs     []IntrinsicDef
	filters  int
	conds    int
}

func (p *parser) peek() token { return p.toks[p.i] }

func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tEOF {
		p.i++
	}
	return t
}

func (p *parser) expect(k tokKind, what string) (token, error) {
	t := p.next()
	if t.kind != k {
		return t, errAt(t.pos, "expected %s, found %s", what, t)
	}
	return t, nil
}

// enter counts one level of nesting; leave undoes it.
func (p *parser) enter(pos int) error {
	p.depth++
	if p.depth > p.maxDepth {
		return errAt(pos, "query nested deeper than %d", p.maxDepth)
	}
	return nil
}

func (p *parser) leave() { p.depth-- }

func (p *parser) isWord(w string) bool {
	t := p.peek()
	return t.kind == tWord && t.text == w
}

func (p *parser) query() (*Query, error) {
	q := &Query{}
	s, err := p.spanset(0)
	if err != nil {
		return nil, err
	}
	q.Spans = s
	for p.peek().kind == tPipe {
		p.next()
		if q.Metrics != nil {
			return nil, errAt(p.peek().pos, "a metrics function (%s) must end the query", q.Metrics.Fn)
		}
		st, err := p.stage()
		if err != nil {
			return nil, err
		}
		if m, ok := st.(*Metrics); ok {
			q.Metrics = m
			continue
		}
		q.Stages = append(q.Stages, st)
	}
	if t := p.peek(); t.kind != tEOF {
		return nil, errAt(t.pos, "unexpected %s", t)
	}
	return q, nil
}

// spansetOp reads the spanset operator at the cursor, if any, and its
// binding power: the structural operators and then bind tighter than &&
// and ||, which share one (left to right), as in Tempo's grammar.
func (p *parser) spansetOp() (SetOpKind, int, bool) {
	t := p.peek()
	switch t.kind {
	case tAnd:
		return SetAnd, 1, true
	case tOr:
		return SetOr, 1, true
	case tGt:
		return SetChild, 2, true
	case tDesc:
		return SetDesc, 2, true
	case tLt:
		return SetParent, 2, true
	case tAnc:
		return SetAnc, 2, true
	case tSibling:
		return SetSibling, 2, true
	case tNotChild:
		return SetNotChild, 2, true
	case tNotDesc:
		return SetNotDesc, 2, true
	case tNotPar:
		return SetNotParent, 2, true
	case tNotAnc:
		return SetNotAnc, 2, true
	case tNre:
		return SetNotSibling, 2, true
	case tWord:
		if t.text == "then" {
			return SetThen, 2, true
		}
	}
	return 0, 0, false
}

func (p *parser) spanset(minPrec int) (Spanset, error) {
	left, err := p.spansetPrimary()
	if err != nil {
		return nil, err
	}
	for {
		op, prec, ok := p.spansetOp()
		if !ok || prec <= minPrec {
			return left, nil
		}
		t := p.next()
		if err := p.enter(t.pos); err != nil {
			return nil, err
		}
		right, err := p.spanset(prec)
		p.leave()
		if err != nil {
			return nil, err
		}
		left = &SetOp{Pos: t.pos, Op: op, L: left, R: right}
	}
}

func (p *parser) spansetPrimary() (Spanset, error) {
	t := p.next()
	switch t.kind {
	case tLBrace:
		if err := p.enter(t.pos); err != nil {
			return nil, err
		}
		defer p.leave()
		p.filters++
		f := &Filter{Pos: t.pos}
		if p.peek().kind == tRBrace {
			p.next()
			return f, nil
		}
		cond, err := p.expr(0)
		if err != nil {
			return nil, err
		}
		if err := p.checkCondition(cond); err != nil {
			return nil, err
		}
		f.Cond = cond
		if _, err := p.expect(tRBrace, "} or an operator"); err != nil {
			return nil, err
		}
		return f, nil
	case tLParen:
		if err := p.enter(t.pos); err != nil {
			return nil, err
		}
		defer p.leave()
		s, err := p.spanset(0)
		if err != nil {
			return nil, err
		}
		if _, err := p.expect(tRParen, ")"); err != nil {
			return nil, err
		}
		return s, nil
	}
	return nil, errAt(t.pos, "expected a span set such as { status = error }, found %s", t)
}

// exprOp reads the operator inside a filter at the cursor, if any, and
// its binding power: comparisons over && and ||, which share one and
// apply left to right, as in Tempo's grammar ({ a || b && c } is
// { (a || b) && c }).
func (p *parser) exprOp() (Op, int, bool) {
	t := p.peek()
	switch t.kind {
	case tOr:
		return OpOr, 1, true
	case tAnd:
		return OpAnd, 1, true
	case tEq:
		return OpEq, 3, true
	case tNeq:
		return OpNeq, 3, true
	case tGt:
		return OpGt, 3, true
	case tGte:
		return OpGte, 3, true
	case tLt:
		return OpLt, 3, true
	case tLte:
		return OpLte, 3, true
	case tRe:
		return OpRe, 3, true
	case tNre:
		return OpNre, 3, true
	case tWord:
		if t.text == "contains" {
			return OpContains, 3, true
		}
	}
	return 0, 0, false
}

func (p *parser) expr(minPrec int) (Expr, error) {
	left, err := p.unary()
	if err != nil {
		return nil, err
	}
	for {
		op, prec, ok := p.exprOp()
		if !ok || prec <= minPrec {
			return left, nil
		}
		t := p.next()
		if err := p.enter(t.pos); err != nil {
			return nil, err
		}
		right, err := p.expr(prec)
		p.leave()
		if err != nil {
			return nil, err
		}
		b := &Binary{Pos: t.pos, Op: op, L: left, R: right}
		if !op.Logical() {
			if err := p.checkComparison(b); err != nil {
				return nil, err
			}
			if _, _, again := p.exprOp(); again {
				if op2, _, _ := p.exprOp(); !op2.Logical() {
					return nil, errAt(p.peek().pos, "comparisons do not chain: join them with && or ||")
				}
			}
		}
		left = b
	}
}

func (p *parser) unary() (Expr, error) {
	t := p.peek()
	switch t.kind {
	case tNot:
		p.next()
		if err := p.enter(t.pos); err != nil {
			return nil, err
		}
		defer p.leave()
		x, err := p.unary()
		if err != nil {
			return nil, err
		}
		if err := p.checkCondition(x); err != nil {
			return nil, err
		}
		return &Not{Pos: t.pos, X: x}, nil
	case tLParen:
		p.next()
		if err := p.enter(t.pos); err != nil {
			return nil, err
		}
		defer p.leave()
		x, err := p.expr(0)
		if err != nil {
			return nil, err
		}
		if _, err := p.expect(tRParen, ")"); err != nil {
			return nil, err
		}
		return x, nil
	}
	return p.operand()
}

// keywordLiterals are the words that stand for constants.
var keywordLiterals = map[string]Literal{
	"true": {Type: TBool, Bool: true}, "false": {Type: TBool}, "nil": {Type: TNil},
	"ok": {Type: TStatus, Str: "ok"}, "error": {Type: TStatus, Str: "error"}, "unset": {Type: TStatus, Str: "unset"},
	"unspecified": {Type: TKind, Str: "unspecified"}, "internal": {Type: TKind, Str: "internal"},
	"server": {Type: TKind, Str: "server"}, "client": {Type: TKind, Str: "client"},
	"producer": {Type: TKind, Str: "producer"}, "consumer": {Type: TKind, Str: "consumer"},
}

func (p *parser) operand() (Expr, error) {
	t := p.next()
	switch t.kind {
	case tString:
		return &Literal{Pos: t.pos, Type: TString, Str: t.text}, nil
	case tNumber:
		return &Literal{Pos: t.pos, Type: TNumber, Num: t.num}, nil
	case tDuration:
		return &Literal{Pos: t.pos, Type: TDuration, Dur: t.dur}, nil
	case tWord:
		return p.word(t)
	}
	return nil, errAt(t.pos, "expected a field or a value, found %s", t)
}

// word reads a word as a constant, an attribute or an intrinsic.
func (p *parser) word(t token) (Expr, error) {
	w := t.text
	if lit, ok := keywordLiterals[w]; ok {
		lit.Pos = t.pos
		return &lit, nil
	}
	for _, sc := range []struct {
		prefix string
		scope  Scope
	}{{"span.", ScopeSpan}, {"resource.", ScopeResource}, {"event.", ScopeEvent}, {".", ScopeAny}} {
		if name, ok := strings.CutPrefix(w, sc.prefix); ok {
			if name == "" {
				return nil, errAt(t.pos, "%q names no attribute", w)
			}
			return &Attr{Pos: t.pos, Scope: sc.scope, Name: name}, nil
		}
	}
	if d, arg, ok := lookupIntrinsic(p.defs, w); ok {
		return &Intrinsic{Pos: t.pos, Name: d.Name, Arg: arg, Def: d}, nil
	}
	if scope, _, ok := strings.Cut(w, "."); ok {
		return nil, errAt(t.pos, "unknown scope %q in %q: write span., resource., event. or . before an attribute", scope, w)
	}
	return nil, errAt(t.pos, "unknown field %q: an attribute needs a scope (span.%s, resource.%s or .%s)", w, w, w, w)
}

// typeOf is the static type of a field or constant.
func typeOf(e Expr) Type {
	switch e := e.(type) {
	case *Literal:
		return e.Type
	case *Intrinsic:
		return e.Def.Type
	case *Attr:
		return TAny
	}
	return TBool
}

func isField(e Expr) bool {
	switch e.(type) {
	case *Attr, *Intrinsic:
		return true
	}
	return false
}

// checkCondition checks that e can stand for true or false: a
// comparison, a logical expression, a boolean intrinsic, an attribute
// (true when it is the boolean true) or true/false.
func (p *parser) checkCondition(e Expr) error {
	switch e := e.(type) {
	case *Binary, *Not:
		return nil
	case *Attr:
		p.conds++
		return nil
	case *Intrinsic:
		if e.Def.Type == TBool {
			p.conds++
			return nil
		}
		return errAt(e.Pos, "%s is a %s, not a condition: compare it, as in %s = …", e.Name, e.Def.Type, e.Name)
	case *Literal:
		if e.Type == TBool {
			return nil
		}
		return errAt(e.Pos, "a %s is not a condition", e.Type)
	}
	return errAt(e.exprPos(), "not a condition")
}

// flip is the comparison with its sides swapped (1 < x is x > 1).
func flip(op Op) Op {
	switch op {
	case OpGt:
		return OpLt
	case OpGte:
		return OpLte
	case OpLt:
		return OpGt
	case OpLte:
		return OpGte
	}
	return op
}

// checkComparison checks the types of a comparison and puts it in the
// form field op constant, compiling its pattern.
func (p *parser) checkComparison(b *Binary) error {
	if op := b.Op; op.Logical() {
		return nil
	}
	if _, ok := b.L.(*Literal); ok && isField(b.R) {
		if b.Op == OpRe || b.Op == OpNre || b.Op == OpContains {
			return errAt(b.Pos, "%s takes the field on its left, the pattern on its right", b.Op)
		}
		b.L, b.R, b.Op = b.R, b.L, flip(b.Op)
	}
	if !isField(b.L) {
		return errAt(b.L.exprPos(), "the left side of %s must be a field (an attribute or an intrinsic)", b.Op)
	}
	lit, ok := b.R.(*Literal)
	if !ok {
		return errAt(b.R.exprPos(), "the right side of %s must be a constant (a string, number, duration, true, false or nil)", b.Op)
	}
	p.conds++
	ft, lt := typeOf(b.L), lit.Type
	name := fieldName(b.L)
	if lt == TNil {
		if b.Op != OpEq && b.Op != OpNeq {
			return errAt(b.Pos, "nil compares with = or != only")
		}
		return nil
	}
	switch b.Op {
	case OpRe, OpNre, OpContains:
		if ft != TString && ft != TAny {
			return errAt(b.Pos, "%s applies to strings; %s is a %s", b.Op, name, ft)
		}
		if lt != TString {
			return errAt(lit.Pos, "%s needs a string on its right, not a %s", b.Op, lt)
		}
		if b.Op == OpContains {
			if lit.Str == "" {
				return errAt(lit.Pos, "contains needs a non-empty string")
			}
			return nil
		}
		re, err := regexp.Compile("^(?:" + lit.Str + ")$")
		if err != nil {
			return errAt(lit.Pos, "bad regular expression (RE2 syntax): %v", err)
		}
		b.Re = re
		return nil
	}
	ordered := b.Op == OpGt || b.Op == OpGte || b.Op == OpLt || b.Op == OpLte
	switch ft {
	case TAny:
		switch lt {
		case TString, TNumber:
			return nil
		case TBool:
			if ordered {
				return errAt(b.Pos, "booleans compare with = or != only")
			}
			return nil
		}
		return errAt(lit.Pos, "an attribute compares with a string, a number or a boolean, not a %s", lt)
	case TString:
		if lt != TString {
			return errAt(lit.Pos, "%s is a string: compare it with a string, not a %s", name, lt)
		}
	case TNumber:
		if lt != TNumber {
			return errAt(lit.Pos, "%s is a number: compare it with a number, not a %s", name, lt)
		}
	case TDuration:
		if lt != TDuration {
			return errAt(lit.Pos, "%s is a duration: compare it with a duration such as 1.5s or 300ms, not a %s", name, lt)
		}
	case TBool, TStatus, TKind:
		if lt == TString && ft != TBool {
			lit.Type = ft // status = "error" means status = error
			lt = ft
		}
		if lt != ft {
			return errAt(lit.Pos, "%s is a %s: compare it with a %s, not a %s", name, ft, ft, lt)
		}
		if ordered {
			return errAt(b.Pos, "%s compares with = or != only", name)
		}
		if ft == TStatus && lit.Str != "ok" && lit.Str != "error" && lit.Str != "unset" {
			return errAt(lit.Pos, "status is ok, error or unset, not %q", lit.Str)
		}
		if ft == TKind {
			if _, ok := keywordLiterals[lit.Str]; !ok || keywordLiterals[lit.Str].Type != TKind {
				return errAt(lit.Pos, "kind is unspecified, internal, server, client, producer or consumer, not %q", lit.Str)
			}
		}
	}
	return nil
}

// fieldName is how a field is written.
func fieldName(e Expr) string {
	switch e := e.(type) {
	case *Attr:
		if e.Scope == ScopeAny {
			return "." + e.Name
		}
		return e.Scope.String() + "." + e.Name
	case *Intrinsic:
		if e.Arg != "" {
			return e.Name + "." + e.Arg
		}
		return e.Name
	}
	return "value"
}

// aggregates are the pipeline's aggregate functions.
var aggregates = map[string]bool{"count": true, "avg": true, "sum": true, "min": true, "max": true}

// metricsFns are the metrics functions and whether they take a field.
var metricsFns = map[string]bool{
	"rate": false, "count_over_time": false, "quantile_over_time": true, "sum_over_time": true,
	"avg_over_time": true, "min_over_time": true, "max_over_time": true,
}

func (p *parser) stage() (Stage, error) {
	t := p.next()
	if t.kind != tWord {
		return nil, errAt(t.pos, "expected a pipeline stage (count(), avg(…), by(…), select(…), rate(), …), found %s", t)
	}
	switch {
	case aggregates[t.text]:
		return p.aggregate(t)
	case t.text == "by" || t.text == "select":
		exprs, err := p.fieldList()
		if err != nil {
			return nil, err
		}
		if t.text == "by" {
			return &By{Pos: t.pos, Exprs: exprs}, nil
		}
		return &Select{Pos: t.pos, Exprs: exprs}, nil
	case t.text == "coalesce":
		if _, err := p.expect(tLParen, "("); err != nil {
			return nil, err
		}
		if _, err := p.expect(tRParen, ")"); err != nil {
			return nil, err
		}
		return &Coalesce{Pos: t.pos}, nil
	}
	if takesField, ok := metricsFns[t.text]; ok {
		return p.metrics(t, takesField)
	}
	return nil, errAt(t.pos, "unknown pipeline stage %q", t.text)
}

func (p *parser) aggregate(t token) (Stage, error) {
	a := &Aggregate{Pos: t.pos, Fn: t.text}
	if _, err := p.expect(tLParen, "("); err != nil {
		return nil, err
	}
	if t.text != "count" {
		f, err := p.numericField(t.text)
		if err != nil {
			return nil, err
		}
		a.Arg = f
	}
	if _, err := p.expect(tRParen, ")"); err != nil {
		return nil, err
	}
	op, _, ok := p.exprOp()
	if !ok || op.Logical() || op == OpRe || op == OpNre || op == OpContains {
		return nil, errAt(p.peek().pos, "%s() needs a comparison after it, as in %s() > 3", t.text, t.text)
	}
	p.next()
	v, err := p.operand()
	if err != nil {
		return nil, err
	}
	lit, ok := v.(*Literal)
	if !ok || (lit.Type != TNumber && lit.Type != TDuration) {
		return nil, errAt(v.exprPos(), "%s() compares with a number or a duration", t.text)
	}
	want := TNumber
	if a.Arg != nil && typeOf(a.Arg) == TDuration {
		want = TDuration
	}
	if lit.Type != want {
		return nil, errAt(lit.Pos, "%s() of %s is a %s: compare it with a %s", t.text, fieldName(a.Arg), want, want)
	}
	a.Op, a.Value = op, lit
	return a, nil
}

// numericField reads a field that an aggregate or a metrics function
// can take: a number, a duration or an attribute (read as a number).
func (p *parser) numericField(fn string) (Expr, error) {
	t := p.next()
	if t.kind != tWord {
		return nil, errAt(t.pos, "%s needs a field, found %s", fn, t)
	}
	e, err := p.word(t)
	if err != nil {
		return nil, err
	}
	switch typeOf(e) {
	case TNumber, TDuration:
		if in, ok := e.(*Intrinsic); ok && in.Def.Trace {
			return nil, errAt(t.pos, "%s takes a span's field; %s is the run's", fn, in.Name)
		}
		return e, nil
	case TAny:
		if _, ok := e.(*Attr); ok {
			return e, nil
		}
	}
	return nil, errAt(t.pos, "%s needs a number or a duration; %s is a %s", fn, fieldName(e), typeOf(e))
}

// fieldList reads ( field, field, … ).
func (p *parser) fieldList() ([]Expr, error) {
	if _, err := p.expect(tLParen, "("); err != nil {
		return nil, err
	}
	var out []Expr
	for {
		t := p.next()
		if t.kind != tWord {
			return nil, errAt(t.pos, "expected a field, found %s", t)
		}
		e, err := p.word(t)
		if err != nil {
			return nil, err
		}
		if !isField(e) {
			return nil, errAt(t.pos, "expected a field, found %s", t)
		}
		out = append(out, e)
		if p.peek().kind == tComma {
			p.next()
			continue
		}
		if _, err := p.expect(tRParen, ", or )"); err != nil {
			return nil, err
		}
		return out, nil
	}
}

func (p *parser) metrics(t token, takesField bool) (Stage, error) {
	m := &Metrics{Pos: t.pos, Fn: t.text}
	if _, err := p.expect(tLParen, "("); err != nil {
		return nil, err
	}
	if takesField {
		f, err := p.numericField(t.text)
		if err != nil {
			return nil, err
		}
		m.Arg = f
		if t.text == "quantile_over_time" {
			for p.peek().kind == tComma {
				p.next()
				q, err := p.expect(tNumber, "a quantile between 0 and 1")
				if err != nil {
					return nil, err
				}
				if q.num < 0 || q.num > 1 {
					return nil, errAt(q.pos, "quantile %s is not between 0 and 1", q.text)
				}
				m.Quantiles = append(m.Quantiles, q.num)
			}
			if len(m.Quantiles) == 0 {
				return nil, errAt(p.peek().pos, "quantile_over_time needs at least one quantile, as in quantile_over_time(duration, .95)")
			}
		}
	}
	if _, err := p.expect(tRParen, ")"); err != nil {
		return nil, err
	}
	if p.isWord("by") {
		p.next()
		by, err := p.fieldList()
		if err != nil {
			return nil, err
		}
		m.By = by
	}
	return m, nil
}
