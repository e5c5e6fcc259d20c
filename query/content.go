package query

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/tallyhq/tally/schema"
	"github.com/tallyhq/tally/transcript"
)

// SpanContent loads the captured content of one span (tool arguments and
// results, messages, system instructions), deduplicated, ordered by kind
// then source key. A span without content, or not in the project, has none.
func (r ContentReader) SpanContent(ctx context.Context, project, traceID, spanID string) ([]schema.Content, error) {
	var rows []schema.Content
	q, args := spanContentSQL(r.store, project, traceID, spanID)
	if err := r.store.Conn().Select(ctx, &rows, q, args...); err != nil {
		return nil, fmt.Errorf("load content of span %s/%s: %w", traceID, spanID, err)
	}
	return rows, nil
}

// spanContentSQL builds SpanContent's statement.
func spanContentSQL(t tables, project, traceID, spanID string) (string, []any) {
	q := "SELECT " + schema.ContentColumnNames() + " FROM " + final(t.Table(schema.TableContent)) +
		" WHERE project = ? AND trace_id = ? AND span_id = ? ORDER BY kind, source_key"
	return q, []any{project, strings.ToLower(traceID), strings.ToLower(spanID)}
}

// MissingSpans returns the span ids of spanIDs the project does not hold
// in the trace, in their order and once each (one primary-key range read):
// a span with no content is told from no span.
func (r ContentReader) MissingSpans(ctx context.Context, project, traceID string, spanIDs []string) ([]string, error) {
	ids := make([]string, 0, len(spanIDs))
	for _, id := range spanIDs {
		if id = strings.ToLower(id); !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	q, args := missingSpansSQL(r.store, project, traceID, ids)
	rows, err := r.store.Conn().Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("look up spans of %s: %w", traceID, err)
	}
	found, err := scanAll(rows, func(s *string) []any { return []any{s} })
	if err != nil {
		return nil, fmt.Errorf("look up spans of %s: %w", traceID, err)
	}
	return slices.DeleteFunc(ids, func(id string) bool { return slices.Contains(found, id) }), nil
}

// missingSpansSQL builds missingSpans' statement: which of the span ids
// (lowercase) the run holds.
func missingSpansSQL(t tables, project, traceID string, ids []string) (string, []any) {
	return "SELECT DISTINCT span_id FROM " + t.Table(schema.TableSpans) +
		" WHERE project = ? AND trace_id = ? AND span_id IN ?", []any{project, strings.ToLower(traceID), traceSet(ids)}
}

// RunExists reports whether the project holds any span of the trace.
func (r ContentReader) RunExists(ctx context.Context, project, traceID string) (bool, error) {
	var n uint64
	q, args := runExistsSQL(r.store, project, traceID)
	if err := r.store.Conn().QueryRow(ctx, q, args...).Scan(&n); err != nil {
		return false, fmt.Errorf("look up run %s: %w", traceID, err)
	}
	return n > 0, nil
}

// runExistsSQL builds RunExists' statement.
func runExistsSQL(t tables, project, traceID string) (string, []any) {
	return "SELECT count() FROM " + t.Table(schema.TableSpans) + " WHERE project = ? AND trace_id = ?",
		[]any{project, strings.ToLower(traceID)}
}

// SpanChat reads one span's conversation (what the model was sent and
// answered) from its captured content (as SpanContent loaded it), its
// flattened message attributes and its message events, in whichever
// dialect the instrumentation used (see package transcript). A span
// without any has an empty chat.
func (r ContentReader) SpanChat(ctx context.Context, project, traceID, spanID string, contents []schema.Content) (transcript.Chat, error) {
	key := SpanKey{strings.ToLower(traceID), strings.ToLower(spanID)}
	chats, err := r.spanChats(ctx, project, []SpanKey{key}, contents)
	if err != nil {
		return transcript.Chat{}, err
	}
	return chats[key], nil
}

// SpanKey names one span of a project.
type SpanKey struct{ TraceID, SpanID string }

// spanChats reads the chats of several spans with two queries, one over
// the content table and one over the spans table, whatever their number;
// non-nil contents are the spans' content rows, already loaded, and save
// the first.
func (r *core) spanChats(ctx context.Context, project string, keys []SpanKey, contents []schema.Content) (map[SpanKey]transcript.Chat, error) {
	out := make(map[SpanKey]transcript.Chat, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	set := clickhouse.GroupSet{Value: make([]any, len(keys))}
	for i, k := range keys {
		set.Value[i] = clickhouse.GroupSet{Value: []any{k.TraceID, k.SpanID}}
	}
	srcs := make(map[SpanKey]*transcript.Source, len(keys))
	src := func(k SpanKey) *transcript.Source {
		if srcs[k] == nil {
			srcs[k] = &transcript.Source{Content: map[string]string{}, Attributes: map[string]string{}}
		}
		return srcs[k]
	}
	if contents == nil {
		q, args := spanChatsContentSQL(r.store, project, set)
		if err := r.store.Conn().Select(ctx, &contents, q, args...); err != nil {
			return nil, fmt.Errorf("load the content of %d spans: %w", len(keys), err)
		}
	}
	for _, c := range contents {
		src(SpanKey{c.TraceID, c.SpanID}).Content[c.SourceKey] = c.Value
	}
	var rows []struct {
		TraceID    string   `ch:"trace_id"`
		SpanID     string   `ch:"span_id"`
		AttrKeys   []string `ch:"attr_keys"`
		AttrValues []string `ch:"attr_values"`
		EventNames []string `ch:"event_names"`
		EventAttrs []string `ch:"event_attrs"`
		Finish     []string `ch:"finish_reasons"`
	}
	q, args := spanChatsSpansSQL(r.store, project, set)
	if err := r.store.Conn().Select(ctx, &rows, q, args...); err != nil {
		return nil, fmt.Errorf("load the messages of %d spans: %w", len(keys), err)
	}
	for _, row := range rows {
		s := src(SpanKey{row.TraceID, row.SpanID})
		s.FinishReasons = row.Finish
		for i := range min(len(row.AttrKeys), len(row.AttrValues)) {
			s.Attributes[row.AttrKeys[i]] = row.AttrValues[i]
		}
		for i, name := range row.EventNames {
			e := transcript.Event{Name: name}
			if i < len(row.EventAttrs) {
				e.Attributes = decodeObject(row.EventAttrs[i])
			}
			s.Events = append(s.Events, e)
		}
	}
	for k, s := range srcs {
		out[k] = transcript.Read(*s)
	}
	return out, nil
}

// spanChatsContentSQL builds spanChats' read of the content of the spans
// in set, a set of (trace id, span id) pairs.
func spanChatsContentSQL(t tables, project string, set clickhouse.GroupSet) (string, []any) {
	return "SELECT " + schema.ContentColumnNames() + " FROM " + final(t.Table(schema.TableContent)) +
		" WHERE project = ? AND (trace_id, span_id) IN ?", []any{project, set}
}

// spanChatsSpansSQL builds spanChats' read of the message attributes and
// events of the spans in set, a set of (trace id, span id) pairs.
func spanChatsSpansSQL(t tables, project string, set clickhouse.GroupSet) (string, []any) {
	return "SELECT trace_id, span_id, attr_keys, attr_values, event_names, event_attrs, finish_reasons FROM " +
		t.Table(schema.TableSpans) + " WHERE project = ? AND (trace_id, span_id) IN ? " + onePerSpan, []any{project, set}
}
