package query

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/tallyhq/tally/schema"
)

// Spans loads a run's spans, deduplicated, ordered by start time.
//
// It reads in two steps. The sort key finds the run's granules in every daily
// partition, but reading every column of those granules costs far more than
// the run itself (wide rows, arrays). So first a PREWHERE on the key columns
// finds the days the run's spans started on (two narrow columns), then the
// rows are read from those partitions only, again filtered by PREWHERE
// before the wide columns are touched.
func (r TreeReader) Spans(ctx context.Context, project, traceID string) ([]schema.Span, error) {
	spans, _, err := r.spans(ctx, project, traceID, 0)
	return spans, err
}

// spans is Spans reading at most limit spans (the earliest; 0: all), and
// whether the run has more.
func (r *core) spans(ctx context.Context, project, traceID string, limit int) ([]schema.Span, bool, error) {
	return r.readSpans(ctx, project, traceID, schema.SpanColumnsAll(), limit)
}

// readSpans is spans reading the columns of cols (every one, or an
// outline: schema.SpanOutline).
func (r *core) readSpans(ctx context.Context, project, traceID string, cols schema.SpanProjection, limit int) ([]schema.Span, bool, error) {
	ext, err := r.locate(ctx, project, traceID)
	if err != nil || ext.rows == 0 {
		return nil, false, err
	}
	return r.readExtent(ctx, project, traceID, cols, ext, limit)
}

// runExtent is where a run's spans are: the first and last start second
// (partition pruning for the wide read) and the rows stored, duplicate
// deliveries not yet merged included, and the newest span version (a
// settled tree computed before it does not hold).
type runExtent struct {
	lo, hi     time.Time
	rows       uint64
	maxVersion uint64
}

// locate finds a run's extent from the two narrow key columns.
func (r *core) locate(ctx context.Context, project, traceID string) (runExtent, error) {
	var ext runExtent
	q, args := locateSQL(r.store, project, traceID)
	if err := r.store.Conn().QueryRow(ctx, q, args...).Scan(&ext.lo, &ext.hi, &ext.rows, &ext.maxVersion); err != nil {
		return ext, fmt.Errorf("locate run %s: %w", traceID, err)
	}
	return ext, nil
}

// locateSQL builds locate's statement.
func locateSQL(t tables, project, traceID string) (string, []any) {
	return "SELECT min(start), max(start), count(), max(version) FROM " + t.Table(schema.TableSpans) +
		" PREWHERE project = ? AND trace_id = ?", []any{project, strings.ToLower(traceID)}
}

// readExtent reads a located run's spans selecting list, at most limit
// (the earliest; 0: all), and whether the run has more.
func (r *core) readExtent(ctx context.Context, project, traceID string, cols schema.SpanProjection, ext runExtent, limit int) ([]schema.Span, bool, error) {
	traceID = strings.ToLower(traceID)
	// count() counts duplicate deliveries not yet merged: above the limit,
	// read one span more than it to know whether the run really has more.
	more := limit > 0 && ext.rows > uint64(limit)
	read, want := 0, int(min(ext.rows, 1<<20)) // want: the rows expected
	if more {
		read, want = limit+1, limit+1
	}
	if want < schema.UnpackedBelow {
		cols = cols.Unpacked()
	}
	q, args := readExtentSQL(r.store, project, traceID, cols.List(), ext, read)
	rows, err := r.store.Conn().Query(ctx, q, args...)
	if err != nil {
		return nil, false, fmt.Errorf("load run %s: %w", traceID, err)
	}
	defer rows.Close()
	spans, err := cols.Scan(rows, want)
	if err != nil {
		return nil, false, fmt.Errorf("load run %s: %w", traceID, err)
	}
	if more && len(spans) <= limit {
		more = false
	}
	if more {
		spans = spans[:limit]
	}
	return spans, more, nil
}

// readExtentSQL builds readExtent's statement: the located run's spans
// (traceID lowercase) selecting list, in start order, at most limit of
// them (0: all).
func readExtentSQL(t tables, project, traceID, list string, ext runExtent, limit int) (string, []any) {
	q := "SELECT " + list + " FROM " + final(t.Table(schema.TableSpans)) +
		" PREWHERE project = ? AND trace_id = ? WHERE start >= ? AND start <= ? ORDER BY start_ns, span_id"
	if limit > 0 {
		q += " LIMIT " + strconv.Itoa(limit)
	}
	return q, []any{project, traceID, ext.lo, ext.hi}
}
