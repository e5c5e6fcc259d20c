package query

import (
	"context"
	"fmt"
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

// markRows selects the keys index's marks (schema.TableSearchKeys), one
// row an hour and computation.
const markRows = "project = '' AND scope = '' AND key = ''"

// keyIndexMarksSQL builds keyIndexMarks' statement: per hour, the mark
// of the highest version.
func keyIndexMarksSQL(t tables, from, to time.Time) (string, []any) {
	return "SELECT toUInt32(hour) AS h, max(version) AS v, argMax(spans, version), argMax(version_sum, version) FROM " +
			t.Table(schema.TableSearchKeys) + " WHERE " + markRows + " AND hour >= ? AND hour < ? GROUP BY h",
		[]any{from.UTC(), to.UTC()}
}

// keyWindowSQL is what a read of the keys over [since, until] reads of
// each source, as conditions: of the keys index, the rows of the latest
// computation of each hour it marked that lies wholly in the window; of
// the spans, those of the window in the other hours (the open hour, the
// window's edges, any hour not indexed yet). The two never overlap, and
// one statement reads both, so the keys index costs no extra round trip.
func keyWindowSQL(t tables, since, until time.Time) (index, live sqlExpr) {
	table := t.Table(schema.TableSearchKeys)
	first, end := ceilHour(since).UTC(), until.UTC().Truncate(time.Hour)
	marked := "SELECT hour FROM " + table + " WHERE " + markRows + " AND hour >= ? AND hour < ?"
	index = sqlExpr{"hour >= ? AND hour < ? AND (hour, version) IN (SELECT hour, max(version) FROM " + table +
		" WHERE " + markRows + " AND hour >= ? AND hour < ? GROUP BY hour)", []any{first, end, first, end}}
	live = sqlExpr{"start >= ? AND start <= ? AND toStartOfHour(start) NOT IN (" + marked + ")",
		[]any{since.UTC().Truncate(time.Second), until.UTC(), first, end}}
	return index, live
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
	q, args := searchKeysSQL(r.store, project, since, until)
	rows, err := r.store.Conn().Query(searchSettings(ctx, lim), q, args...)
	if err != nil {
		return nil, fmt.Errorf("search keys: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var scope, key string
		var n uint64
		if err := rows.Scan(&scope, &key, &n); err != nil {
			return nil, fmt.Errorf("search keys: %w", err)
		}
		out = append(out, SearchKey{Key: scope + "." + key, Type: "attribute", Spans: n})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("search keys: %w", err)
	}
	return out, nil
}

// searchKeysSQL lists the window's span and resource attribute keys with
// their span counts, span keys first, maxSearchKeys of each scope at most:
// the indexed hours' from the keys index, the others' from the spans'
// key arrays.
func searchKeysSQL(t tables, project string, since, until time.Time) (string, []any) {
	index, live := keyWindowSQL(t, since, until)
	one := func(scope, col string) string {
		return "SELECT '" + scope + "' AS scope, k, count() AS n FROM " + t.Table(schema.TableSpans) + " ARRAY JOIN " + col + " AS k" +
			" WHERE project = ? AND " + live.q + " GROUP BY k"
	}
	q := "SELECT scope, k, sum(n) AS spans FROM (" +
		"SELECT toString(scope) AS scope, key AS k, toUInt64(sum(spans)) AS n FROM " + t.Table(schema.TableSearchKeys) +
		" WHERE project = ? AND total = 1 AND " + index.q + " GROUP BY scope, k" +
		" UNION ALL " + one("span", "attr_keys") + " UNION ALL " + one("resource", "resource_keys") +
		") GROUP BY scope, k ORDER BY scope DESC, spans DESC, k LIMIT " + strconv.Itoa(maxSearchKeys) + " BY scope"
	args := append([]any{project}, index.args...)
	for range 2 {
		args = append(append(args, project), live.args...)
	}
	return q, args
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
	scope, key, indexed := indexedAttr(e)
	stmt, args := searchValuesSQL(r.store, project, v, since, until, scope, key, indexed)
	rows, err := r.store.Conn().Query(searchSettings(ctx, lim), stmt, args...)
	if err != nil {
		return nil, fmt.Errorf("search values of %s: %w", field, err)
	}
	defer rows.Close()
	out := []SearchValue{}
	for rows.Next() {
		var sv SearchValue
		if err := rows.Scan(&sv.Value, &sv.Spans); err != nil {
			return nil, fmt.Errorf("search values of %s: %w", field, err)
		}
		out = append(out, sv)
	}
	return out, rows.Err()
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

// searchValuesSQL lists a field's most frequent values in the window (v
// is the field's valueSQL). For a field the keys index holds (indexed,
// with its scope and key), the indexed hours' values come from the index
// and the others' from the spans, which then keep only the values the
// index would (schema.MaxSearchKeyValueBytes), so that hours read either
// way list alike; any other field is read from the window's spans.
func searchValuesSQL(t tables, project string, v sqlExpr, since, until time.Time, scope, key string, indexed bool) (string, []any) {
	keep := "v != ''"
	rng := sqlExpr{"start >= ? AND start <= ?", []any{since.UTC().Truncate(time.Second), until.UTC()}}
	var index sqlExpr
	if indexed {
		index, rng = keyWindowSQL(t, since, until)
		// v is "1" and the value: one byte more than the value.
		keep += " AND length(v) <= " + strconv.Itoa(schema.MaxSearchKeyValueBytes+1)
	}
	live := "SELECT substring(v, 2) AS value, count() AS n FROM (SELECT " + v.q + " AS v FROM " + t.Table(schema.TableSpans) +
		" WHERE project = ? AND " + rng.q + ") WHERE " + keep + " GROUP BY value"
	args := append(append(append([]any{}, v.args...), project), rng.args...)
	if indexed {
		live = "SELECT value, toUInt64(sum(spans)) AS n FROM " + t.Table(schema.TableSearchKeys) +
			" WHERE project = ? AND scope = ? AND key = ? AND total = 0 AND " + index.q + " GROUP BY value UNION ALL " + live
		args = append(append([]any{project, scope, key}, index.args...), args...)
	}
	return "SELECT value, sum(n) AS spans FROM (" + live + ") GROUP BY value ORDER BY spans DESC, value LIMIT " + strconv.Itoa(maxSearchValues), args
}
