package query

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/tallyhq/tally/query/traceql"
	"github.com/tallyhq/tally/schema"
)

// SearchKey is a field a query can name, for autocomplete: an intrinsic
// or an attribute seen in the window, with how many spans carried it.
type SearchKey struct {
	Key   string `json:"key"`            // as a query writes it: status, span.gen_ai.tool.name, resource.service.name
	Type  string `json:"type"`           // an intrinsic's type; "attribute" for attributes
	Doc   string `json:"doc,omitempty"`  // an intrinsic's meaning
	Spans uint64 `json:"spans,omitzero"` // spans in the window that carried an attribute
}

// SearchValue is a value of a field in the window and how many spans had
// it.
type SearchValue struct {
	Value string `json:"value"`
	Spans uint64 `json:"spans"`
}

// maxSearchKeys is how many attribute keys of each scope SearchKeys
// lists, the most frequent first.
const maxSearchKeys = 500

// maxSearchValues is how many values SearchValues lists, the most
// frequent first.
const maxSearchValues = 50

// stmt is a statement and its arguments as an sqlExpr.
func stmt(q string, args []any) sqlExpr { return sqlExpr{q, args} }

// keyWindow is a window of SearchKeys or SearchValues cut where the keys
// index answers: the indexed hours, [first, last] (first zero for none),
// and the ranges read from the spans.
type keyWindow struct {
	first, last time.Time
	live        []keyRange
}

// keyRange is a range of span starts read live: [from, to), or [from, to]
// when closed (the window's end).
type keyRange struct {
	from, to time.Time
	closed   bool
}

// cond is the range's condition on start, with its arguments.
func (k keyRange) cond() (string, []any) {
	op := "<"
	if k.closed {
		op = "<="
	}
	return "start >= ? AND start " + op + " ?", []any{k.from.UTC().Truncate(time.Second), k.to.UTC()}
}

// splitKeyWindow cuts [since, until] into the whole hours the keys index
// holds (package keyindex indexes closed hours) and the rest.
func (r *core) splitKeyWindow(ctx context.Context, since, until time.Time) (keyWindow, error) {
	var w keyWindow
	marks, err := r.keyIndexMarks(ctx, ceilHour(since), until.Truncate(time.Hour))
	if err != nil {
		return w, err
	}
	hours := make([]time.Time, 0, len(marks))
	for h := range marks {
		hours = append(hours, h)
	}
	slices.SortFunc(hours, func(a, b time.Time) int { return a.Compare(b) })
	cursor := since
	for _, h := range hours {
		if h.After(cursor) {
			w.live = append(w.live, keyRange{from: cursor, to: h})
		}
		if w.first.IsZero() {
			w.first = h
		}
		w.last, cursor = h, h.Add(time.Hour)
	}
	if !cursor.After(until) {
		w.live = append(w.live, keyRange{from: cursor, to: until, closed: true})
	}
	return w, nil
}

// SearchKeyMarks reads the keys index's marks of the hours in [from, to):
// each hour's latest computation, with the span fingerprint it saw
// (package keyindex compares it with the spans').
func (r RollupSource) SearchKeyMarks(ctx context.Context, from, to time.Time) (map[time.Time]schema.SearchKeyHour, error) {
	return r.keyIndexMarks(ctx, from, to)
}

// keyIndexMarks reads the keys index's marks of the hours in [from, to).
func (r *core) keyIndexMarks(ctx context.Context, from, to time.Time) (map[time.Time]schema.SearchKeyHour, error) {
	out := map[time.Time]schema.SearchKeyHour{}
	if !to.After(from) {
		return out, nil
	}
	q, args := keyIndexMarksSQL(r.store, from, to)
	rows, err := r.store.Conn().Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read the search keys index's hours: %w", err)
	}
	marks, err := scanAll(rows, func(m *struct {
		hour uint32
		schema.SearchKeyHour
	}) []any {
		return []any{&m.hour, &m.Version, &m.Spans, &m.VersionSum}
	})
	if err != nil {
		return nil, fmt.Errorf("read the search keys index's hours: %w", err)
	}
	for _, m := range marks {
		m.Hour = time.Unix(int64(m.hour), 0).UTC()
		out[m.Hour] = m.SearchKeyHour
	}
	return out, nil
}

// keyIndexMarksSQL builds keyIndexMarks' statement: per hour, the mark
// of the highest version.
func keyIndexMarksSQL(t tables, from, to time.Time) (string, []any) {
	return "SELECT toUInt32(hour) AS h, max(version) AS v, argMax(spans, version), argMax(version_sum, version) FROM " +
			t.Table(schema.TableSearchKeys) + " WHERE project = '' AND scope = '' AND key = '' AND hour >= ? AND hour < ? GROUP BY h",
		[]any{from.UTC(), to.UTC()}
}

// indexedRows is the condition that keeps, of the keys index, the rows of
// the latest marked computation of each hour in [first, last].
func indexedRows(t tables, w keyWindow) (string, []any) {
	table := t.Table(schema.TableSearchKeys)
	return "hour >= ? AND hour <= ? AND (hour, version) IN (SELECT hour, max(version) FROM " + table +
			" WHERE project = '' AND scope = '' AND key = '' AND hour >= ? AND hour <= ? GROUP BY hour)",
		[]any{w.first, w.last, w.first, w.last}
}

// SearchKeys lists the fields a query over the window can name: the
// intrinsics, then the span and resource attribute keys the window's
// spans carried, the most frequent first. The closed hours the keys index
// holds are read from it, the rest of the window from the spans.
func (r SearchReader) SearchKeys(ctx context.Context, project string, since, until time.Time, lim SearchLimits) ([]SearchKey, error) {
	lim = lim.withDefaults()
	if err := checkSearchWindow(since, until, lim); err != nil {
		return nil, err
	}
	var out []SearchKey
	for _, d := range traceql.Intrinsics() {
		name := d.Name
		if d.WithArg {
			name += "."
		}
		out = append(out, SearchKey{Key: name, Type: d.Type.String(), Doc: d.Doc})
	}
	w, err := r.splitKeyWindow(ctx, since, until)
	if err != nil {
		return nil, fmt.Errorf("search keys: %w", err)
	}
	var stmts []sqlExpr
	if !w.first.IsZero() {
		stmts = append(stmts, stmt(indexedKeysSQL(r.store, project, w)))
	}
	for _, lr := range w.live {
		stmts = append(stmts, stmt(liveKeysSQL(r.store, project, lr)))
	}
	counts := map[[2]string]uint64{}
	for _, st := range stmts {
		rows, err := r.store.Conn().Query(searchSettings(ctx, lim), st.q, st.args...)
		if err != nil {
			return nil, fmt.Errorf("search keys: %w", err)
		}
		for rows.Next() {
			var scope, key string
			var n uint64
			if err := rows.Scan(&scope, &key, &n); err != nil {
				rows.Close()
				return nil, fmt.Errorf("search keys: %w", err)
			}
			counts[[2]string{scope, key}] += n
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, fmt.Errorf("search keys: %w", err)
		}
	}
	keys := make([][2]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	// Span attributes first, then resource ones; the most frequent first.
	slices.SortFunc(keys, func(a, b [2]string) int {
		return cmp.Or(cmp.Compare(b[0], a[0]), cmp.Compare(counts[b], counts[a]), cmp.Compare(a[1], b[1]))
	})
	perScope := map[string]int{}
	for _, k := range keys {
		if perScope[k[0]]++; perScope[k[0]] <= maxSearchKeys {
			out = append(out, SearchKey{Key: k[0] + "." + k[1], Type: "attribute", Spans: counts[k]})
		}
	}
	return out, nil
}

// indexedKeysSQL reads the keys of the window's indexed hours with their
// span counts, maxSearchKeys of each scope at most.
func indexedKeysSQL(t tables, project string, w keyWindow) (string, []any) {
	gen, args := indexedRows(t, w)
	return "SELECT scope, key, sum(spans) AS n FROM " + t.Table(schema.TableSearchKeys) + " WHERE project = ? AND total = 1 AND " + gen +
		" GROUP BY scope, key ORDER BY n DESC, key LIMIT " + strconv.Itoa(maxSearchKeys) + " BY scope", append([]any{project}, args...)
}

// liveKeysSQL lists the span and resource attribute keys of a range's
// spans with their span counts, maxSearchKeys of each scope at most.
func liveKeysSQL(t tables, project string, lr keyRange) (string, []any) {
	rng, rargs := lr.cond()
	one := func(scope, col string) string {
		return "SELECT '" + scope + "' AS scope, k, count() AS n FROM " + t.Table(schema.TableSpans) + " ARRAY JOIN " + col + " AS k" +
			" WHERE project = ? AND " + rng + " GROUP BY k ORDER BY n DESC, k LIMIT " + strconv.Itoa(maxSearchKeys)
	}
	w := append([]any{project}, rargs...)
	return "SELECT scope, k, n FROM (" + one("span", "attr_keys") + " UNION ALL " + one("resource", "resource_keys") + ")",
		append(append([]any{}, w...), w...)
}

// SearchValues lists the most frequent values of a field (as a query
// writes it) in the window's spans. A scoped attribute's values come from
// the keys index for the closed hours it holds (each hour's 50 most
// frequent, values of up to 200 bytes), the rest from the spans; other
// fields are read from the spans.
func (r SearchReader) SearchValues(ctx context.Context, project, field string, since, until time.Time, lim SearchLimits) ([]SearchValue, error) {
	lim = lim.withDefaults()
	if err := checkSearchWindow(since, until, lim); err != nil {
		return nil, err
	}
	q, err := traceql.Parse("{} | select("+field+")", lim.Query)
	if err != nil {
		return nil, &traceql.Error{Pos: 0, Msg: fmt.Sprintf("%q is not a field: an intrinsic or an attribute such as span.gen_ai.tool.name", field)}
	}
	e := q.Stages[0].(*traceql.Select).Exprs[0]
	if in, ok := e.(*traceql.Intrinsic); ok {
		if vocab := vocabulary(in.Name); vocab != nil {
			out := make([]SearchValue, len(vocab))
			for i, v := range vocab {
				out[i].Value = v
			}
			return out, nil
		}
		if in.Def.Trace || in.Name == "content" {
			return nil, &traceql.Error{Pos: 0, Msg: field + " has no list of values"}
		}
	}
	v, err := valueSQL(e)
	if err != nil {
		return nil, err
	}
	w := keyWindow{live: []keyRange{{from: since, to: until, closed: true}}}
	scope, key, indexed := indexedAttr(e)
	if indexed {
		if w, err = r.splitKeyWindow(ctx, since, until); err != nil {
			return nil, fmt.Errorf("search values of %s: %w", field, err)
		}
	}
	var stmts []sqlExpr
	if !w.first.IsZero() {
		stmts = append(stmts, stmt(indexedValuesSQL(r.store, project, scope, key, w)))
	}
	for _, lr := range w.live {
		stmts = append(stmts, stmt(liveValuesSQL(r.store, project, v, lr, indexed)))
	}
	counts := map[string]uint64{}
	for _, st := range stmts {
		rows, err := r.store.Conn().Query(searchSettings(ctx, lim), st.q, st.args...)
		if err != nil {
			return nil, fmt.Errorf("search values of %s: %w", field, err)
		}
		for rows.Next() {
			var sv SearchValue
			if err := rows.Scan(&sv.Value, &sv.Spans); err != nil {
				rows.Close()
				return nil, fmt.Errorf("search values of %s: %w", field, err)
			}
			counts[sv.Value] += sv.Spans
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, fmt.Errorf("search values of %s: %w", field, err)
		}
	}
	out := make([]SearchValue, 0, len(counts))
	for v, n := range counts {
		out = append(out, SearchValue{Value: v, Spans: n})
	}
	slices.SortFunc(out, func(a, b SearchValue) int {
		return cmp.Or(cmp.Compare(b.Spans, a.Spans), cmp.Compare(a.Value, b.Value))
	})
	return out[:min(len(out), maxSearchValues)], nil
}

// indexedAttr reports whether the keys index holds a field's values: an
// attribute of the span or resource scope that is stored as an attribute
// (not in a column).
func indexedAttr(e traceql.Expr) (scope, key string, ok bool) {
	a, isAttr := e.(*traceql.Attr)
	switch {
	case !isAttr:
		return "", "", false
	case a.Scope == traceql.ScopeSpan:
		_, inColumn := columnAttrs[a.Name]
		return "span", a.Name, !inColumn
	case a.Scope == traceql.ScopeResource:
		return "resource", a.Name, a.Name != "service.name"
	}
	return "", "", false
}

// indexedValuesSQL reads a key's values in the window's indexed hours.
func indexedValuesSQL(t tables, project, scope, key string, w keyWindow) (string, []any) {
	gen, args := indexedRows(t, w)
	return "SELECT value, sum(spans) AS n FROM " + t.Table(schema.TableSearchKeys) + " WHERE project = ? AND scope = ? AND key = ? AND total = 0 AND " + gen +
		" GROUP BY value ORDER BY n DESC, value LIMIT " + strconv.Itoa(maxSearchValues), append([]any{project, scope, key}, args...)
}

// liveValuesSQL reads a field's values in a range's spans (v is the
// field's valueSQL); for a field the index holds, only the values it
// would keep (schema.MaxSearchKeyValueBytes), so that hours read either
// way list alike.
func liveValuesSQL(t tables, project string, v sqlExpr, lr keyRange, indexed bool) (string, []any) {
	rng, rargs := lr.cond()
	keep := "v != ''"
	if indexed {
		// v is "1" and the value: one byte more than the value.
		keep += " AND length(v) <= " + strconv.Itoa(schema.MaxSearchKeyValueBytes+1)
	}
	return "SELECT substring(v, 2) AS value, count() AS n FROM (SELECT " + v.q + " AS v FROM " + t.Table(schema.TableSpans) +
			" WHERE project = ? AND " + rng + ") WHERE " + keep + " GROUP BY value ORDER BY n DESC, value LIMIT " + strconv.Itoa(maxSearchValues),
		append(append(append([]any{}, v.args...), project), rargs...)
}
