package query

import (
	"cmp"
	"context"
	"fmt"
	"slices"
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
	latest := read == 0 && r.latestRead(ext)
	q, args := readExtentSQL(r.store, project, traceID, cols.List(), ext, read, latest)
	rows, err := r.store.Conn().Query(ctx, q, args...)
	if err != nil {
		return nil, false, fmt.Errorf("load run %s: %w", traceID, err)
	}
	defer rows.Close()
	spans, err := cols.Scan(rows, want)
	if err != nil {
		return nil, false, fmt.Errorf("load run %s: %w", traceID, err)
	}
	if latest {
		inStartOrder(spans)
	}
	if more && len(spans) <= limit {
		more = false
	}
	if more {
		spans = spans[:limit]
	}
	return spans, more, nil
}

// latestRunRows is the most rows of a run (duplicate deliveries not yet
// merged included) read whole with each span's newest version picked by
// latestOf instead of FINAL, on servers of 20.x and later (the embedded
// 26.x engine): there FINAL's merge of a run's granules is a fixed ~8 ms a
// statement, a third of the read of a 500-span run's every column (22 →
// 13.5 ms at 10M spans stored), while ClickHouse 18.16 reads either way
// in the same time (8–9 ms). The same holds for the run's content read
// beside them (reviewContentSQL). latestOf sorts the rows it keeps in
// memory, where FINAL streams them: above this bound, FINAL.
const latestRunRows = 10000

// latestRead says whether the reads of the located run ext pick each row's
// newest version with latestOf rather than FINAL (see latestRunRows).
func (r *core) latestRead(ext runExtent) bool {
	return ext.rows <= latestRunRows && r.store.Capabilities().Major >= 20
}

// readExtentSQL builds readExtent's statement: the located run's spans
// (traceID lowercase) selecting list, in start order, at most limit of
// them (0: all). latest (only with limit 0) picks each span's newest
// version with latestOf instead of FINAL, the rows in no particular order
// (inStartOrder puts them in start order).
func readExtentSQL(t tables, project, traceID, list string, ext runExtent, limit int, latest bool) (string, []any) {
	args := []any{project, traceID, ext.lo, ext.hi}
	where := " PREWHERE project = ? AND trace_id = ? WHERE start >= ? AND start <= ? "
	if latest {
		return "SELECT " + list + " FROM " + t.Table(schema.TableSpans) + where + latestOf("span_id"), args
	}
	q := "SELECT " + list + " FROM " + final(t.Table(schema.TableSpans)) + where + "ORDER BY start_ns, span_id"
	if limit > 0 {
		q += " LIMIT " + strconv.Itoa(limit)
	}
	return q, args
}

// inStartOrder puts spans in the order readExtentSQL's FINAL read gives
// (start, then span id, bytewise as ClickHouse compares strings), in
// place: it sorts their indexes, then moves each span once along the
// permutation's cycles. A Span is a wide struct, which a sort would swap
// n log n times, and a sorted copy would allocate the run's spans again.
func inStartOrder(spans []schema.Span) {
	order := make([]int, len(spans))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		return cmp.Or(cmp.Compare(spans[a].StartNs, spans[b].StartNs), strings.Compare(spans[a].SpanID, spans[b].SpanID))
	})
	// Position j takes spans[order[j]]; a position's span is moved on
	// before the position is written, and order[j] = -1 marks it done.
	for i := range order {
		if order[i] < 0 {
			continue
		}
		held := spans[i]
		for j := i; ; {
			k := order[j]
			order[j] = -1
			if k == i {
				spans[j] = held
				break
			}
			spans[j] = spans[k]
			j = k
		}
	}
}
