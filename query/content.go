package query

import (
	"context"
	"fmt"
	"strings"

	"github.com/tallyhq/tally/schema"
	"github.com/tallyhq/tally/transcript"
)

// SpanContent loads the captured content of one span (tool arguments and
// results, messages, system instructions), deduplicated, ordered by kind
// then source key. A span without content, or not in the project, has none.
func (r *Reader) SpanContent(ctx context.Context, project, traceID, spanID string) ([]schema.Content, error) {
	var rows []schema.Content
	q := "SELECT " + schema.ContentColumnNames() + " FROM " + final(r.store.Table(schema.TableContent)) +
		" WHERE project = ? AND trace_id = ? AND span_id = ? ORDER BY kind, source_key"
	if err := r.store.Conn().Select(ctx, &rows, q, project, strings.ToLower(traceID), strings.ToLower(spanID)); err != nil {
		return nil, fmt.Errorf("load content of span %s/%s: %w", traceID, spanID, err)
	}
	return rows, nil
}

// RunExists reports whether the project holds any span of the trace.
func (r *Reader) RunExists(ctx context.Context, project, traceID string) (bool, error) {
	var n uint64
	q := "SELECT count() FROM " + r.store.Table(schema.TableSpans) + " WHERE project = ? AND trace_id = ?"
	if err := r.store.Conn().QueryRow(ctx, q, project, strings.ToLower(traceID)).Scan(&n); err != nil {
		return false, fmt.Errorf("look up run %s: %w", traceID, err)
	}
	return n > 0, nil
}

// SpanChat reads one span's conversation (what the model was sent and
// answered) from its captured content, its flattened message attributes
// and its message events, in whichever dialect the instrumentation used
// (see package transcript). A span without any has an empty chat.
func (r *Reader) SpanChat(ctx context.Context, project, traceID, spanID string) (transcript.Chat, error) {
	contents, err := r.SpanContent(ctx, project, traceID, spanID)
	if err != nil {
		return transcript.Chat{}, err
	}
	var rows []struct {
		AttrKeys   []string `ch:"attr_keys"`
		AttrValues []string `ch:"attr_values"`
		EventNames []string `ch:"event_names"`
		EventAttrs []string `ch:"event_attrs"`
		Finish     []string `ch:"finish_reasons"`
	}
	q := "SELECT attr_keys, attr_values, event_names, event_attrs, finish_reasons FROM " + r.store.Table(schema.TableSpans) +
		" WHERE project = ? AND trace_id = ? AND span_id = ? LIMIT 1"
	if err := r.store.Conn().Select(ctx, &rows, q, project, strings.ToLower(traceID), strings.ToLower(spanID)); err != nil {
		return transcript.Chat{}, fmt.Errorf("load messages of span %s/%s: %w", traceID, spanID, err)
	}
	src := transcript.Source{Content: make(map[string]string, len(contents)), Attributes: map[string]string{}}
	for _, c := range contents {
		src.Content[c.SourceKey] = c.Value
	}
	if len(rows) > 0 {
		row := rows[0]
		src.FinishReasons = row.Finish
		for i := range min(len(row.AttrKeys), len(row.AttrValues)) {
			src.Attributes[row.AttrKeys[i]] = row.AttrValues[i]
		}
		for i, name := range row.EventNames {
			e := transcript.Event{Name: name}
			if i < len(row.EventAttrs) {
				e.Attributes = decodeObject(row.EventAttrs[i])
			}
			src.Events = append(src.Events, e)
		}
	}
	return transcript.Read(src), nil
}
