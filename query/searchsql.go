package query

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/tallyhq/tally/query/traceql"
	"github.com/tallyhq/tally/schema"
)

// Search's SQL: a query's span-level conditions become expressions over
// the spans table, bound as parameters (a query's text reaches ClickHouse
// only as values), under the caller's project and the time range.
//
// The candidate read groups the window's spans that may match any filter
// by run (each span once: see spanDedup), with, for each span, a bit per
// condition (Plan.Conds) computed
// in SQL; package traceql then evaluates the filters, the structural
// operators and the pipeline from the bits in Go. Run-level conditions
// (trace:cost, trace:task, …) are read from the runs' summaries: in SQL
// they are taken as possibly true, so the read keeps every span they could
// make match (see relaxed).

// sqlExpr is a fragment of SQL and its parameters, in order.
type sqlExpr struct {
	q    string
	args []any
}

func sqlf(q string, args ...any) sqlExpr { return sqlExpr{q, args} }

// join joins fragments with sep, in parentheses.
func join(sep string, parts ...sqlExpr) sqlExpr {
	var out sqlExpr
	qs := make([]string, len(parts))
	for i, p := range parts {
		qs[i] = p.q
		out.args = append(out.args, p.args...)
	}
	out.q = "(" + strings.Join(qs, sep) + ")"
	return out
}

func not(e sqlExpr) sqlExpr { return sqlExpr{"NOT (" + e.q + ")", e.args} }

// goSpanIntrinsics are span-level intrinsics read in Go from a run's
// spans as a whole: the retry rules classify each tool call against the
// run's earlier calls, the safety review gives each tool step its effect
// class and terminal status, and the counting rule decides which spans'
// usage counts. SQL only narrows them (goNarrowSQL).
var goSpanIntrinsics = map[string]bool{
	"retry": true, "retry_class": true, "retry_args": true, "effect": true, "step": true, "counted": true,
}

// goSpanLevel reports whether an atomic condition (or a field) reads a
// span-level intrinsic computed in Go.
func goSpanLevel(e traceql.Expr) bool {
	in, ok := intrinsicOf(e)
	return ok && goSpanIntrinsics[in.Name]
}

// intrinsicOf is the intrinsic an atomic condition (or a field) reads:
// itself, or the left side of its comparison.
func intrinsicOf(e traceql.Expr) (*traceql.Intrinsic, bool) {
	if b, ok := e.(*traceql.Binary); ok {
		e = b.L
	}
	in, ok := e.(*traceql.Intrinsic)
	return in, ok
}

// goNarrowSQL is what a span must be for a condition on a Go-read
// intrinsic to hold for it: a tool span for the retry, effect and step
// fields (which other spans lack, so that only = nil holds there), a span
// with usage for counted (true only there); "1" where the condition may
// hold for any span.
func goNarrowSQL(e traceql.Expr) sqlExpr {
	b, isCmp := e.(*traceql.Binary)
	if in, _ := intrinsicOf(e); in.Name == "counted" {
		if !isCmp || b.R.(*traceql.Literal).Type == traceql.TBool && b.R.(*traceql.Literal).Bool == (b.Op == traceql.OpEq) {
			return sqlf("usage_mode != ''")
		}
		return sqlf("1")
	}
	if isCmp && b.R.(*traceql.Literal).Type == traceql.TNil && b.Op == traceql.OpEq {
		return sqlf("1")
	}
	return sqlf("span_type = 'tool'")
}

// spanColumn is the spans column (or expression) of a span-level
// intrinsic, and whether its value is a number.
func spanColumn(name string) (string, bool) {
	switch name {
	case "name":
		return "name", false
	case "status":
		return "status", false
	case "statusMessage":
		return "status_message", false
	case "kind":
		return "kind", false
	case "duration":
		return "duration_ns", true
	case "span:id":
		return "span_id", false
	case "span:parentID":
		return "parent_span_id", false
	case "trace:id":
		return "trace_id", false
	case "instrumentation:name":
		return "scope_name", false
	case "instrumentation:version":
		return "scope_version", false
	case "cost":
		return "cost_total", true
	case "tokens":
		return "(input_tokens + output_tokens)", true
	case "input_tokens", "cache_read_tokens", "cache_write_tokens", "output_tokens", "reasoning_tokens":
		return name, true
	case "agent":
		return "agent_name", false
	case "model", "provider", "operation":
		return name, false
	case "tool":
		return "tool_name", false
	case "args":
		return "args_hash", false
	}
	return "", false
}

// columnAttr is how a span attribute that ingest stores in a column
// reads back from it: its value as the span sent it (as text), and
// whether the column holds anything (for rows that predate column_keys).
type columnAttr struct{ value, filled string }

// textColumn is a string column that holds the attribute as sent.
func textColumn(col string) columnAttr { return columnAttr{col, col + " != ''"} }

// finishReasonsJSON renders finish_reasons as the JSON list the span sent
// (ingest stores an attribute's list as JSON).
const finishReasonsJSON = `concat('[', arrayStringConcat(arrayMap(x -> concat('"', replaceAll(replaceAll(x, '\\', '\\\\'), '"', '\\"'), '"'), finish_reasons), ','), ']')`

// columnAttrs are the span attribute keys ingest stores in a column when a
// span sends them and they win their alias chain (ingest/normalize.go), by
// the key as sent: a query naming one reads the column when the span's
// column_keys record that it sent that key. Rows stored before tally
// recorded column_keys hold [schema.ColumnKeysUnknown]: for them, any
// value in the column counts as the key's.
var columnAttrs = map[string]columnAttr{
	"gen_ai.response.model": textColumn("response_model"), "ai.response.model": textColumn("response_model"),
	"gen_ai.request.model": textColumn("request_model"), "ai.model.id": textColumn("request_model"),
	"llm.model_name": textColumn("model"), "langfuse.observation.model.name": textColumn("model"),
	"gen_ai.provider.name": textColumn("provider"), "gen_ai.system": textColumn("provider"),
	"llm.provider": textColumn("provider"), "llm.system": textColumn("provider"),
	"gen_ai.agent.name": textColumn("agent_name"), "agent.name": textColumn("agent_name"), "ai.telemetry.functionId": textColumn("agent_name"),
	"traceloop.entity.name": {"if(span_type = 'tool', tool_name, agent_name)", "if(span_type = 'tool', tool_name, agent_name) != ''"},
	"gen_ai.agent.id":       textColumn("agent_id"), "agent.id": textColumn("agent_id"),
	"gen_ai.conversation.id": textColumn("conversation_id"), "session.id": textColumn("conversation_id"),
	"langfuse.session.id": textColumn("conversation_id"), "traceloop.association.properties.session_id": textColumn("conversation_id"),
	"ai.telemetry.metadata.sessionId": textColumn("conversation_id"),
	"user.id":                         textColumn("user_id"), "langfuse.user.id": textColumn("user_id"),
	"traceloop.association.properties.user_id": textColumn("user_id"), "ai.telemetry.metadata.userId": textColumn("user_id"),
	"task.name":        textColumn("task_name"),
	"gen_ai.tool.name": textColumn("tool_name"), "tool.name": textColumn("tool_name"), "ai.toolCall.name": textColumn("tool_name"),
	"gen_ai.tool.call.id": textColumn("tool_call_id"), "tool_call.id": textColumn("tool_call_id"),
	"tool.id": textColumn("tool_call_id"), "ai.toolCall.id": textColumn("tool_call_id"),
	"gen_ai.tool.type": textColumn("tool_type"),
	"gen_ai.step.id":   textColumn("step_id"), "step.id": textColumn("step_id"), "step_id": textColumn("step_id"),
	"tally.tool.idempotency_key": textColumn("step_id"),
	"error.type":                 textColumn("error_type"), "gen_ai.operation.name": textColumn("operation"),
	"gen_ai.tool.call.attempt": {"toString(attempt)", "attempt != 0"}, "retry.attempt": {"toString(attempt)", "attempt != 0"},
	"attempt":                        {"toString(attempt)", "attempt != 0"},
	"gen_ai.response.finish_reasons": {finishReasonsJSON, "notEmpty(finish_reasons)"},
	"ai.response.finishReason":       {"finish_reasons[1]", "notEmpty(finish_reasons)"},
	// Seconds as sent; ingest keeps milliseconds.
	"gen_ai.response.time_to_first_chunk": {"toString(ttfc_ms / 1000)", "ttfc_ms != 0"},
	"ai.response.msToFirstChunk":          {"toString(ttfc_ms)", "ttfc_ms != 0"},
}

// attrSQL is the value (as text) and presence of an attribute on a span.
func attrSQL(a *traceql.Attr) (value, present sqlExpr) {
	spanV := sqlf("attr_values[indexOf(attr_keys, ?)]", a.Name)
	spanP := sqlf("has(attr_keys, ?)", a.Name)
	resV := sqlf("resource_values[indexOf(resource_keys, ?)]", a.Name)
	resP := sqlf("has(resource_keys, ?)", a.Name)
	if col, ok := columnAttrs[a.Name]; ok && a.Scope != traceql.ScopeResource {
		spanV = sqlExpr{"if(" + spanP.q + ", " + spanV.q + ", " + col.value + ")", append(append([]any{}, spanP.args...), spanV.args...)}
		spanP = join(" OR ", spanP, sqlf("has(column_keys, ?)", a.Name),
			sqlf("(has(column_keys, ?) AND "+col.filled+")", schema.ColumnKeysUnknown))
	}
	if a.Name == "service.name" && a.Scope != traceql.ScopeSpan {
		resV, resP = sqlf("service"), sqlf("service != ''")
	}
	switch a.Scope {
	case traceql.ScopeSpan:
		return spanV, spanP
	case traceql.ScopeResource:
		return resV, resP
	}
	v := sqlExpr{"if(" + spanP.q + ", " + spanV.q + ", " + resV.q + ")", append(append(append([]any{}, spanP.args...), spanV.args...), resV.args...)}
	return v, join(" OR ", spanP, resP)
}

// fold is the SQL of a text case-folded for contains: lowercased by
// Unicode code point, with the Greek final sigma folded to σ as Go's
// case folding does.
func fold(e string) string { return "replaceAll(lowerUTF8(" + e + "), 'ς', 'σ')" }

// foldText is fold's twin in Go: each code point lowered, ς as σ.
func foldText(s string) string { return strings.Map(foldRune, s) }

// foldRune folds one code point as foldText does.
func foldRune(r rune) rune {
	if r = unicode.ToLower(r); r == 'ς' {
		return 'σ'
	}
	return r
}

// compareText is the SQL comparison of a text value with a string.
func compareText(v sqlExpr, b *traceql.Binary, lit string) sqlExpr {
	args := append([]any{}, v.args...)
	switch b.Op {
	case traceql.OpRe:
		return sqlExpr{"match(" + v.q + ", ?)", append(args, "^(?:"+lit+")$")}
	case traceql.OpNre:
		return sqlExpr{"NOT match(" + v.q + ", ?)", append(args, "^(?:"+lit+")$")}
	case traceql.OpContains:
		if strings.ContainsAny(lit, "σςΣ") {
			return sqlExpr{"positionUTF8(" + fold(v.q) + ", ?) > 0", append(args, foldText(lit))}
		}
		// No sigma to fold: the engine's case-insensitive search, which
		// folds each code point as it compares, without a lowered copy.
		return sqlExpr{"positionCaseInsensitiveUTF8(" + v.q + ", ?) > 0", append(args, lit)}
	}
	return sqlExpr{v.q + " " + b.Op.String() + " ?", append(args, lit)}
}

// condSQL compiles one atomic span-level condition (a Plan.Conds entry).
func condSQL(t searchTarget, e traceql.Expr, project string, since, until time.Time) (sqlExpr, error) {
	switch e := e.(type) {
	case *traceql.Attr:
		v, p := attrSQL(e)
		return join(" AND ", p, sqlExpr{v.q + " = 'true'", v.args}), nil
	case *traceql.Intrinsic:
		return sqlExpr{}, &traceql.Error{Pos: e.Pos, Msg: e.Name + " is not a condition"}
	case *traceql.Binary:
		lit := e.R.(*traceql.Literal)
		switch f := e.L.(type) {
		case *traceql.Attr:
			if f.Scope == traceql.ScopeEvent {
				return eventAttrSQL(f, e, lit), nil
			}
			v, p := attrSQL(f)
			return attrCompare(v, p, e, lit), nil
		case *traceql.Intrinsic:
			return intrinsicSQL(t, f, e, lit, project, since, until)
		}
	}
	return sqlExpr{}, fmt.Errorf("search: no SQL for %T", e)
}

// attrCompare compares an attribute's text value with a constant: a
// number compares as a number (a value that is not one does not match), a
// boolean as true/false, nil tests presence; a missing attribute matches
// no comparison but = nil.
func attrCompare(v, p sqlExpr, b *traceql.Binary, lit *traceql.Literal) sqlExpr {
	switch lit.Type {
	case traceql.TNil:
		if b.Op == traceql.OpEq {
			return not(p)
		}
		return p
	case traceql.TNumber:
		num := sqlExpr{"ifNull(toFloat64OrNull(" + v.q + ") " + b.Op.String() + " ?, 0)", append(append([]any{}, v.args...), lit.Num)}
		return join(" AND ", p, num)
	case traceql.TBool:
		return join(" AND ", p, sqlExpr{v.q + " " + b.Op.String() + " ?", append(append([]any{}, v.args...), strconv.FormatBool(lit.Bool))})
	}
	return join(" AND ", p, compareText(v, b, lit.Str))
}

// eventAttrSQL compares an attribute of any of the span's events (each
// stored as a JSON object) with a constant.
func eventAttrSQL(a *traceql.Attr, b *traceql.Binary, lit *traceql.Literal) sqlExpr {
	has := sqlExpr{"arrayExists(e -> visitParamHas(e, ?), event_attrs)", []any{a.Name}}
	switch lit.Type {
	case traceql.TNil:
		if b.Op == traceql.OpEq {
			return not(has)
		}
		return has
	case traceql.TNumber:
		return sqlExpr{"arrayExists(e -> visitParamHas(e, ?) AND ifNull(toFloat64OrNull(visitParamExtractRaw(e, ?)) " + b.Op.String() + " ?, 0), event_attrs)",
			[]any{a.Name, a.Name, lit.Num}}
	case traceql.TBool:
		return sqlExpr{"arrayExists(e -> visitParamExtractRaw(e, ?) " + b.Op.String() + " ?, event_attrs)", []any{a.Name, strconv.FormatBool(lit.Bool)}}
	}
	inner := compareText(sqlf("visitParamExtractString(e, ?)", a.Name), b, lit.Str)
	return sqlExpr{"arrayExists(e -> visitParamHas(e, ?) AND " + inner.q + ", event_attrs)", append([]any{a.Name}, inner.args...)}
}

// intrinsicSQL compiles a comparison of a span-level intrinsic.
func intrinsicSQL(t searchTarget, f *traceql.Intrinsic, b *traceql.Binary, lit *traceql.Literal, project string, since, until time.Time) (sqlExpr, error) {
	switch f.Name {
	case "event:name":
		if lit.Type == traceql.TNil {
			return sqlf(map[bool]string{true: "empty(event_names)", false: "notEmpty(event_names)"}[b.Op == traceql.OpEq]), nil
		}
		inner := compareText(sqlf("n"), b, lit.Str)
		return sqlExpr{"arrayExists(n -> " + inner.q + ", event_names)", inner.args}, nil
	case "content":
		return contentSQL(t, b, lit, project, since, until), nil
	}
	col, numeric := spanColumn(f.Name)
	if col == "" {
		return sqlExpr{}, &traceql.Error{Pos: f.Pos, Msg: f.Name + " is not a span's field"}
	}
	switch lit.Type {
	case traceql.TNil:
		empty := col + " = ''"
		if numeric {
			empty = col + " = 0"
		}
		if b.Op == traceql.OpEq {
			return sqlf(empty), nil
		}
		return sqlf("NOT (" + empty + ")"), nil
	case traceql.TNumber:
		return sqlf(col+" "+b.Op.String()+" ?", lit.Num), nil
	case traceql.TDuration:
		return sqlf(col+" "+b.Op.String()+" ?", uint64(lit.Dur)), nil
	}
	return compareText(sqlf(col), b, lit.Str), nil
}

// contentSQL matches the spans with captured content (messages, system
// instructions, tool arguments and results) satisfying the comparison, in
// the window.
func contentSQL(t searchTarget, b *traceql.Binary, lit *traceql.Literal, project string, since, until time.Time) sqlExpr {
	sub := "SELECT trace_id, span_id FROM " + t.Table(schema.TableContent) + " WHERE project = ? AND start >= ? AND start <= ?"
	args := []any{project, since.UTC().Truncate(time.Second), until.UTC()}
	if lit.Type == traceql.TNil {
		op := "IN"
		if b.Op == traceql.OpEq {
			op = "NOT IN"
		}
		return sqlExpr{"(trace_id, span_id) " + op + " (" + sub + ")", args}
	}
	cmp := compareText(sqlf("value"), b, lit.Str)
	if t.textIndex && b.Op == traceql.OpContains {
		for _, w := range indexWords(lit.Str) {
			sub += " AND lowerUTF8(value) LIKE ?"
			args = append(args, "%"+w+"%")
		}
	}
	return sqlExpr{"(trace_id, span_id) IN (" + sub + " AND " + cmp.q + ")", append(args, cmp.args...)}
}

// searchTarget is where a search's SQL reads: the tables, and whether the
// content table has a text index (schema.ContentTextIndex).
type searchTarget struct {
	tables
	textIndex bool
}

// target is the store's searchTarget.
func (r SearchReader) target() searchTarget {
	return searchTarget{r.store, r.store.Capabilities().TextIndex}
}

// minIndexWord is the shortest word a content search looks up in the text
// index: the server evaluates shorter LIKE patterns without it
// (text_index_like_min_pattern_length).
const minIndexWord = 4

// indexWords are the words of a contains needle, folded, that narrow a
// content search through the text index: its runs of token characters
// (the index's tokenizer splits at each ASCII character that is not a
// letter or digit), each of which lies within one token of any value
// holding the needle, so LIKE '%word%' on the lowered value holds where
// the needle does. Left out: the short words, and those with a letter the
// server may lower otherwise than Go folds it (ambiguousCase).
func indexWords(needle string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(needle, func(r rune) bool {
		return r < utf8.RuneSelf && !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9')
	}) {
		if strings.ContainsFunc(w, ambiguousCase) {
			continue
		}
		if w = foldText(w); len(w) >= minIndexWord && !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	return out
}

// ambiguousCase reports whether a letter of a needle may be lowered by
// the server otherwise than Go folds it: İ, which has a lowercase of two
// code points (i and a combining dot) that Go's simple mapping shortens to
// i, and the sigmas, which the server lowers by context (a word's final Σ
// to ς; checked on the 26.x engine) and the fold maps to σ. Every other
// code point has one lowercase, the same in both.
func ambiguousCase(r rune) bool { return r == 'İ' || r == 'Σ' || r == 'σ' || r == 'ς' }

// relaxed compiles a filter's condition so that it holds for every span
// the exact condition may hold for: run-level conditions, read in Go, are
// taken as true wherever they stand (negations pushed down to them first).
func relaxed(p *traceql.Plan, e traceql.Expr, neg bool, cond []sqlExpr) sqlExpr {
	switch e := e.(type) {
	case *traceql.Binary:
		switch e.Op {
		case traceql.OpAnd, traceql.OpOr:
			and := (e.Op == traceql.OpAnd) != neg
			sep := " OR "
			if and {
				sep = " AND "
			}
			return join(sep, relaxed(p, e.L, neg, cond), relaxed(p, e.R, neg, cond))
		}
	case *traceql.Not:
		return relaxed(p, e.X, !neg, cond)
	case *traceql.Literal:
		if e.Bool != neg {
			return sqlf("1")
		}
		return sqlf("0")
	}
	c := cond[p.CondIndex(e)]
	if c.q == "" { // read in Go
		if goSpanLevel(e) && !neg {
			return goNarrowSQL(e)
		}
		return sqlf("1")
	}
	if neg {
		return not(c)
	}
	return c
}

// runLevel reports whether an atomic condition (or a field) reads a
// run-level field.
func runLevel(e traceql.Expr) bool {
	in, ok := intrinsicOf(e)
	return ok && in.Def.Trace
}

// valueSQL is the SQL of a field's value on a span, as text, and whether
// it is present; for a number or a duration (nanoseconds), the number as
// text.
func valueSQL(e traceql.Expr) (sqlExpr, error) {
	switch f := e.(type) {
	case *traceql.Attr:
		if f.Scope == traceql.ScopeEvent {
			return sqlExpr{}, &traceql.Error{Pos: f.Pos, Msg: "an event attribute cannot be grouped or selected"}
		}
		v, p := attrSQL(f)
		return sqlExpr{"if(" + p.q + ", concat('1', " + v.q + "), '')", append(append([]any{}, p.args...), v.args...)}, nil
	case *traceql.Intrinsic:
		if f.Def.Trace || goSpanIntrinsics[f.Name] {
			return sqlf("''"), nil // read in Go
		}
		col, numeric := spanColumn(f.Name)
		if col == "" {
			return sqlExpr{}, &traceql.Error{Pos: f.Pos, Msg: f.Name + " cannot be grouped or selected"}
		}
		if numeric {
			return sqlf("concat('1', toString(" + col + "))"), nil
		}
		return sqlf("if(" + col + " != '', concat('1', " + col + "), '')"), nil
	}
	return sqlExpr{}, fmt.Errorf("search: no value for %T", e)
}

// searchPlanSQL is a compiled query: the candidate read's parts.
type searchPlanSQL struct {
	conds     []sqlExpr // per Plan.Conds; q "" for a run-level condition
	filters   []sqlExpr // per Plan.Filters, relaxed
	values    []sqlExpr // per Plan.Fields
	necessary sqlExpr   // over the run's groupBitOr(f) AS fm: the runs that may match
}

// compileSearch compiles the plan's span-level conditions for the window.
func compileSearch(t searchTarget, p *traceql.Plan, project string, since, until time.Time) (searchPlanSQL, error) {
	var out searchPlanSQL
	for _, c := range p.Conds {
		if runLevel(c) || goSpanLevel(c) {
			out.conds = append(out.conds, sqlExpr{})
			continue
		}
		s, err := condSQL(t, c, project, since, until)
		if err != nil {
			return out, err
		}
		out.conds = append(out.conds, s)
	}
	for _, f := range p.Filters {
		if f.Cond == nil {
			out.filters = append(out.filters, sqlf("1"))
			continue
		}
		out.filters = append(out.filters, relaxed(p, f.Cond, false, out.conds))
	}
	for _, f := range p.Fields {
		v, err := valueSQL(f)
		if err != nil {
			return out, err
		}
		out.values = append(out.values, v)
	}
	out.necessary = necessarySQL(p, p.Query.Spans)
	return out, nil
}

// necessarySQL is what a run's spans must have for s to match in it: a
// span passing each filter that must be non-empty (fm is the run's
// groupBitOr of its spans' filter bits).
func necessarySQL(p *traceql.Plan, s traceql.Spanset) sqlExpr {
	switch s := s.(type) {
	case *traceql.Filter:
		i := 0
		for j, f := range p.Filters {
			if f == s {
				i = j
			}
		}
		return sqlf("bitAnd(fm, " + strconv.FormatUint(1<<i, 10) + ") != 0")
	case *traceql.SetOp:
		switch {
		case s.Op == traceql.SetOr:
			return join(" OR ", necessarySQL(p, s.L), necessarySQL(p, s.R))
		case s.Op.Negated():
			return necessarySQL(p, s.R)
		}
		return join(" AND ", necessarySQL(p, s.L), necessarySQL(p, s.R))
	}
	return sqlf("1")
}

// bitsSQL is the UInt64 of one bit per expression that holds.
func bitsSQL(parts []sqlExpr) sqlExpr {
	if len(parts) == 0 {
		return sqlf("toUInt64(0)")
	}
	var out []sqlExpr
	for i, p := range parts {
		if p.q == "" {
			continue
		}
		out = append(out, sqlExpr{"if(" + p.q + ", " + strconv.FormatUint(1<<i, 10) + ", 0)", p.args})
	}
	if len(out) == 0 {
		return sqlf("toUInt64(0)")
	}
	j := join(" + ", out...)
	j.q = "toUInt64" + j.q
	return j
}

// searchCandidatesSQL builds the candidate read: the runs with spans
// starting in [since, until] that may match, newest first by their first
// matching span, after the cursor, at most limit; for each, its matching
// spans' ids, parents, times, condition bits and field values.
func searchCandidatesSQL(t tables, d spanDedup, c searchPlanSQL, project string, since, until time.Time, after *cursor, limit int) (string, []any) {
	cond, filt := bitsSQL(c.conds), bitsSQL(c.filters)
	var inner strings.Builder
	var args []any
	inner.WriteString("SELECT trace_id, span_id, parent_span_id, name, start_ns, end_ns, " + cond.q + " AS c, " + filt.q + " AS f")
	args = append(args, cond.args...)
	args = append(args, filt.args...)
	for i, v := range c.values {
		inner.WriteString(", " + v.q + " AS v" + strconv.Itoa(i))
		args = append(args, v.args...)
	}
	any := join(" OR ", c.filters...)
	inner.WriteString("\n\tFROM " + d.from(t) + "\n\tWHERE project = ? AND start >= ? AND start <= ? AND start_ns >= ? AND start_ns <= ? AND " + any.q + d.end())
	args = append(args, project, since.UTC().Truncate(time.Second), until.UTC(), uint64(since.UnixNano()), uint64(until.UnixNano()))
	args = append(args, any.args...)

	var q strings.Builder
	q.WriteString("SELECT trace_id, min(start_ns) AS first, groupBitOr(f) AS fm, groupArray(span_id), groupArray(parent_span_id), groupArray(name), groupArray(start_ns), groupArray(end_ns), groupArray(c)")
	for i := range c.values {
		q.WriteString(", groupArray(v" + strconv.Itoa(i) + ")")
	}
	q.WriteString("\nFROM (" + inner.String() + ")\nGROUP BY trace_id\nHAVING " + c.necessary.q)
	args = append(args, c.necessary.args...)
	if after != nil {
		q.WriteString(" AND (first < ? OR (first = ? AND trace_id < ?))")
		args = append(args, after.Ns, after.Ns, after.Key)
	}
	q.WriteString("\nORDER BY first DESC, trace_id DESC\nLIMIT " + strconv.Itoa(limit))
	return q.String(), args
}

// searchToolCallsSQL reads the tool calls of the runs, for the retry
// rules.
func searchToolCallsSQL(t tables, project string, ids []string) (string, []any) {
	return "SELECT trace_id, span_id, parent_span_id, tool_name, tool_call_id, step_id, args_hash, status = 'error', start_ns, duration_ns, attempt FROM " +
		t.Table(schema.TableSpans) + " WHERE project = ? AND trace_id IN ? AND span_type = 'tool' " + onePerSpan, []any{project, traceSet(ids)}
}

// searchTreeSQL reads the parent links of every span of the runs, for the
// structural operators that look through spans no filter matched. Like
// every read of a few runs by key, it deduplicates with LIMIT 1 BY on both
// stores: its set is a few thousand spans, where FINAL on the embedded
// engine measured 475 ms p99 for a >> query at 10M spans against 319 ms.
func searchTreeSQL(t tables, project string, ids []string) (string, []any) {
	return "SELECT trace_id, span_id, parent_span_id, start_ns, end_ns FROM " + t.Table(schema.TableSpans) +
		" WHERE project = ? AND trace_id IN ? " + onePerSpan, []any{project, traceSet(ids)}
}

// spanDedup is how a search's reads of spans see each span once: FINAL
// (its newest version, merged as it reads) or LIMIT 1 BY the identity
// (the first copy seen, a hash set of every span read). FINAL is
// parallel on the embedded engine (26.x) and light on memory whatever the
// window; on ClickHouse 18.16 it is single-threaded and about three times
// slower than LIMIT 1 BY over a day, but faster and a fraction of the
// memory over a month (measured at 10M spans: 0.28 against 0.10 s for a
// day, 4.8 against 7.1 s for 30 days). So: FINAL on modern servers and for
// windows over three days, LIMIT 1 BY otherwise.
type spanDedup bool

// dedupFor chooses the deduplication of a read of the window [since,
// until]. (Reads of a few runs by key use LIMIT 1 BY: see searchTreeSQL.)
func dedupFor(caps schema.Capabilities, since, until time.Time) spanDedup {
	return spanDedup(caps.Major >= 20 || until.Sub(since) > 72*time.Hour)
}

// from is the spans table as the reads take it.
func (d spanDedup) from(t tables) string {
	if d {
		return final(t.Table(schema.TableSpans))
	}
	return t.Table(schema.TableSpans)
}

// end ends the read's WHERE: LIMIT 1 BY when not FINAL.
func (d spanDedup) end() string {
	if d {
		return ""
	}
	return " " + onePerSpan
}
