package query

import (
	"context"
	"fmt"
	"strings"

	"github.com/tallyhq/tally/schema"
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
