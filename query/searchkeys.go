package query

import (
	"context"
	"fmt"
	"strconv"
	"strings"
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

// keyWindow is what a read of the keys over [since, until] reads of each
// source, as conditions (keyWindowSQL), from the index's marks of the
// window's hours, read first.
func (r *core) keyWindow(ctx context.Context, since, until time.Time) (index, live sqlExpr, err error) {
	first, end := keyWindowHours(since, until)
	marks, err := r.keyIndexMarks(ctx, first, end)
	if err != nil {
		return sqlExpr{}, sqlExpr{}, err
	}
	index, live = keyWindowSQL(first, end, marks)
	return index, live, nil
}

// keyWindowHours is the window [since, until] in whole hours, the index's
// unit: from the hour since falls in to the end of the hour until falls in.
func keyWindowHours(since, until time.Time) (first, end time.Time) {
	return since.UTC().Truncate(time.Hour), until.UTC().Truncate(time.Hour).Add(time.Hour)
}

// keyWindowSQL is what a read of the keys over the hours [first, end)
// reads of each source, given the index's marks of those hours. Of the
// keys index, the rows of each marked hour's latest computation; of the
// spans, those of the hours not marked (not indexed yet) and, in every
// hour, those the newest computation did not read: versions above
// schema.SearchKeysUpTo of its version (the open hour's newest above all).
// A computation reads no span that new, so nothing is counted twice; a
// late span in an hour indexed before that is counted once the hour is
// indexed again (the next refresh). The conditions name the marks'
// hours, versions and bounds as values, so that the spans' condition is
// one the engine checks on the start and version columns before reading
// any key array, and no subquery reads the index's marks again. (Should a
// new computation of an hour land and be merged over the one named
// between the two reads, that hour's keys would be read short once.)
func keyWindowSQL(first, end time.Time, marks map[time.Time]schema.SearchKeyHour) (index, live sqlExpr) {
	index, live = sqlExpr{q: "0"}, sqlExpr{"start >= ? AND start < ?", []any{first, end}}
	var pairs []string
	var unmarked [][2]time.Time // runs of consecutive hours not indexed
	var newest uint64
	for h := first; h.Before(end); h = h.Add(time.Hour) {
		m, ok := marks[h]
		switch {
		case ok:
			pairs = append(pairs, "(?, ?)")
			index.args = append(index.args, h, m.Version)
			newest = max(newest, m.Version)
		case len(unmarked) > 0 && unmarked[len(unmarked)-1][1].Equal(h):
			unmarked[len(unmarked)-1][1] = h.Add(time.Hour)
		default:
			unmarked = append(unmarked, [2]time.Time{h, h.Add(time.Hour)})
		}
	}
	if len(pairs) == 0 {
		return index, live // nothing indexed: the spans of the whole window
	}
	index.q = "hour >= ? AND hour < ? AND (hour, version) IN (" + strings.Join(pairs, ", ") + ")"
	index.args = append([]any{first, end}, index.args...)
	var or []string
	for _, r := range unmarked {
		or = append(or, "(start >= ? AND start < ?)")
		live.args = append(live.args, r[0], r[1])
	}
	live.q += " AND (" + strings.Join(append(or, "version > ?"), " OR ") + ")"
	live.args = append(live.args, schema.SearchKeysUpTo(newest))
	return index, live
}

// SearchKeys lists the fields a query over the window can name: the
// intrinsics, then the span and resource attribute keys the spans of the
// window's hours carried, the most frequent first. The hours the keys
// index holds are read from it, the rest from the spans (keyWindowSQL).
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
	index, live, err := r.keyWindow(ctx, since, until)
	if err != nil {
		return nil, fmt.Errorf("search keys: %w", err)
	}
	q, args := searchKeysSQL(r.store, project, index, live)
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
func searchKeysSQL(t tables, project string, index, live sqlExpr) (string, []any) {
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
// writes it) in the window's spans. A scoped attribute's values are those
// of the window's hours: from the keys index for the hours it holds (each
// hour's 50 most frequent, values of up to 200 bytes), the rest from the
// spans (keyWindowSQL); other fields are read from the window's spans.
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
	var stmt string
	var args []any
	if scope, key, indexed := indexedAttr(e); indexed {
		index, live, err := r.keyWindow(ctx, since, until)
		if err != nil {
			return nil, fmt.Errorf("search values of %s: %w", field, err)
		}
		stmt, args = searchValuesSQL(r.store, project, v, live, &indexedValues{scope: scope, key: key, index: index})
	} else {
		stmt, args = searchValuesSQL(r.store, project, v, sqlExpr{"start >= ? AND start <= ?", []any{since.UTC().Truncate(time.Second), until.UTC()}}, nil)
	}
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

// indexedValues says where the keys index holds a field's values: its
// scope and key, and which of the index's rows to read (keyWindowSQL).
type indexedValues struct {
	scope, key string
	index      sqlExpr
}

// searchValuesSQL lists a field's most frequent values (v is the field's
// valueSQL) in the spans the live condition selects and, for a field the
// keys index holds (indexed), in the index's rows; the spans then keep
// only the values the index would (schema.MaxSearchKeyValueBytes), so
// that hours read either way list alike.
func searchValuesSQL(t tables, project string, v, live sqlExpr, indexed *indexedValues) (string, []any) {
	keep := "v != ''"
	if indexed != nil {
		// v is "1" and the value: one byte more than the value.
		keep += " AND length(v) <= " + strconv.Itoa(schema.MaxSearchKeyValueBytes+1)
	}
	q := "SELECT substring(v, 2) AS value, count() AS n FROM (SELECT " + v.q + " AS v FROM " + t.Table(schema.TableSpans) +
		" WHERE project = ? AND " + live.q + ") WHERE " + keep + " GROUP BY value"
	args := append(append(append([]any{}, v.args...), project), live.args...)
	if indexed != nil {
		q = "SELECT value, toUInt64(sum(spans)) AS n FROM " + t.Table(schema.TableSearchKeys) +
			" WHERE project = ? AND scope = ? AND key = ? AND total = 0 AND " + indexed.index.q + " GROUP BY value UNION ALL " + q
		args = append(append([]any{project, indexed.scope, indexed.key}, indexed.index.args...), args...)
	}
	return "SELECT value, sum(n) AS spans FROM (" + q + ") GROUP BY value ORDER BY spans DESC, value LIMIT " + strconv.Itoa(maxSearchValues), args
}
