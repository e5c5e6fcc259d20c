package traceql

import (
	"regexp"
	"time"
)

// Query is a parsed, checked query: a spanset expression, then the
// pipeline's stages in order. A query whose last stage is a metrics
// function (Metrics non-nil) answers series instead of runs.
type Query struct {
	Spans   Spanset
	Stages  []Stage
	Metrics *Metrics
	// Source is the query's text as given.
	Source string
}

// Spanset is an expression whose value, in one trace, is a set of spans:
// a Filter or a SetOp of two.
type Spanset interface{ spanset() }

// Filter is { cond }: the spans for which Cond holds (every span when Cond
// is nil: {}).
type Filter struct {
	Pos  int
	Cond Expr
}

// SetOp combines two spansets of one trace (see the SetOp* constants).
type SetOp struct {
	Pos  int
	Op   SetOpKind
	L, R Spanset
}

func (*Filter) spanset() {}
func (*SetOp) spanset()  {}

// SetOpKind is a spanset operator.
type SetOpKind int

// The spanset operators. The structural ones return spans of the right
// side, as Tempo's do: {A} >> {B} is the B spans with an A ancestor.
const (
	SetAnd        SetOpKind = iota // both sides non-empty: their union
	SetOr                          // the union
	SetChild                       // R spans whose parent is an L span (>)
	SetDesc                        // R spans with an L ancestor (>>)
	SetParent                      // R spans that are the parent of an L span (<)
	SetAnc                         // R spans that are an ancestor of an L span (<<)
	SetSibling                     // R spans with an L sibling (~)
	SetNotChild                    // R spans whose parent is not an L span (!>)
	SetNotDesc                     // R spans without an L ancestor (!>>)
	SetNotParent                   // R spans that are the parent of no L span (!<)
	SetNotAnc                      // R spans that are the ancestor of no L span (!<<)
	SetNotSibling                  // R spans without an L sibling (!~)
	SetThen                        // R spans that start at or after an L span's end (tally's then)
)

var setOpText = [...]string{"&&", "||", ">", ">>", "<", "<<", "~", "!>", "!>>", "!<", "!<<", "!~", "then"}

func (k SetOpKind) String() string { return setOpText[k] }

// Structural reports whether the operator relates spans by the tree.
func (k SetOpKind) Structural() bool { return k != SetAnd && k != SetOr && k != SetThen }

// Negated reports whether the operator keeps right-side spans for which
// no left-side span has the relation (!>, !>>, !<, !<<, !~): its left side
// may be empty.
func (k SetOpKind) Negated() bool { return k >= SetNotChild && k <= SetNotSibling }

// Expr is a condition or a value inside a filter.
type Expr interface{ exprPos() int }

// Binary is a comparison (=, !=, >, >=, <, <=, =~, !~, contains) or a
// logical && / ||.
type Binary struct {
	Pos  int
	Op   Op
	L, R Expr
	// Re is the compiled pattern of a regex comparison (anchored at both
	// ends, as Tempo's are).
	Re *regexp.Regexp
}

// Not is !X.
type Not struct {
	Pos int
	X   Expr
}

// Attr is an attribute by its name as the span was sent with it.
type Attr struct {
	Pos   int
	Scope Scope
	Name  string
}

// Intrinsic is one of the fields every span (or every run) has; Name is
// its canonical spelling (see Intrinsics), Arg the name after it for
// trace:outcome.<name>.
type Intrinsic struct {
	Pos  int
	Name string
	Arg  string
	Def  *IntrinsicDef
}

// Literal is a constant.
type Literal struct {
	Pos  int
	Type Type
	Str  string // TString, TStatus, TKind
	Num  float64
	Dur  time.Duration
	Bool bool
}

func (e *Binary) exprPos() int    { return e.Pos }
func (e *Not) exprPos() int       { return e.Pos }
func (e *Attr) exprPos() int      { return e.Pos }
func (e *Intrinsic) exprPos() int { return e.Pos }
func (e *Literal) exprPos() int   { return e.Pos }

// Op is an operator inside a filter.
type Op int

// The operators inside a filter.
const (
	OpAnd Op = iota
	OpOr
	OpEq
	OpNeq
	OpGt
	OpGte
	OpLt
	OpLte
	OpRe
	OpNre
	OpContains // tally's: case-folded substring
)

var opText = [...]string{"&&", "||", "=", "!=", ">", ">=", "<", "<=", "=~", "!~", "contains"}

func (o Op) String() string { return opText[o] }

// Logical reports whether the operator joins conditions.
func (o Op) Logical() bool { return o == OpAnd || o == OpOr }

// Scope says where an attribute is looked up.
type Scope int

// The attribute scopes.
const (
	ScopeAny      Scope = iota // .name: the span's, else the resource's
	ScopeSpan                  // span.name
	ScopeResource              // resource.name
	ScopeEvent                 // event.name: any of the span's events
)

var scopeText = [...]string{"", "span", "resource", "event"}

func (s Scope) String() string { return scopeText[s] }

// Type is a value's type.
type Type int

// The types.
const (
	TAny Type = iota // an attribute: whatever the span sent
	TString
	TNumber
	TDuration
	TBool
	TStatus
	TKind
	TNil
)

var typeText = [...]string{"attribute", "string", "number", "duration", "boolean", "status", "kind", "nil"}

func (t Type) String() string { return typeText[t] }

// Stage is one stage of the pipeline after the spanset expression.
type Stage interface{ stagePos() int }

// Aggregate filters spansets by an aggregate of their spans:
// count() > 3, avg(duration) > 2s, sum(cost) > 1, min(..), max(..).
type Aggregate struct {
	Pos   int
	Fn    string // count, avg, sum, min, max
	Arg   Expr   // nil for count
	Op    Op
	Value *Literal
}

// By splits each spanset into one spanset per value of its expressions.
type By struct {
	Pos   int
	Exprs []Expr
}

// Select adds the values of its expressions to the matched spans.
type Select struct {
	Pos   int
	Exprs []Expr
}

// Coalesce merges a trace's spansets into one.
type Coalesce struct{ Pos int }

func (s *Aggregate) stagePos() int { return s.Pos }
func (s *By) stagePos() int        { return s.Pos }
func (s *Select) stagePos() int    { return s.Pos }
func (s *Coalesce) stagePos() int  { return s.Pos }

// Metrics is a metrics function ending the pipeline: rate(),
// count_over_time(), quantile_over_time(x, q...), sum_over_time(x),
// avg_over_time(x), min_over_time(x), max_over_time(x), each by() labels.
type Metrics struct {
	Pos       int
	Fn        string
	Arg       Expr      // nil for rate and count_over_time
	Quantiles []float64 // quantile_over_time's
	By        []Expr
}

func (s *Metrics) stagePos() int { return s.Pos }
