package query

import (
	"context"
	"fmt"
	"strings"

	"github.com/tallyhq/tally/schema"
)

// TraceIDsWithPrefix lists up to limit trace ids of the project that start
// with prefix (lowercase hex), in order: how a short id the UI shows finds
// its run. The spans table is ordered by (project, trace_id), so the range
// prefix ≤ id < prefix+"g" reads only the matching part of the index.
func (r RunReader) TraceIDsWithPrefix(ctx context.Context, project, prefix string, limit int) ([]string, error) {
	prefix = strings.ToLower(prefix)
	var ids []string
	q, args := traceIDsWithPrefixSQL(r.store, project, prefix, limit)
	rows, err := r.store.Conn().Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("look up trace ids starting with %s: %w", prefix, err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("look up trace ids starting with %s: %w", prefix, err)
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// traceIDsWithPrefixSQL builds TraceIDsWithPrefix's statement, for a
// lowercase prefix.
func traceIDsWithPrefixSQL(t tables, project, prefix string, limit int) (string, []any) {
	q := "SELECT DISTINCT trace_id FROM " + t.Table(schema.TableSpans) +
		" WHERE project = ? AND trace_id >= ? AND trace_id < ? ORDER BY trace_id LIMIT ?"
	return q, []any{project, prefix, prefix + "g", limit}
}
