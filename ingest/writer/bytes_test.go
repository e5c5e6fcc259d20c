package writer

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tallyhq/tally/ingest"
	"github.com/tallyhq/tally/schema"
)

// sizeStore records the rows and the row data of every INSERT.
type sizeStore struct {
	mu       sync.Mutex
	spans    []int64 // bytes per span INSERT
	contents []int64 // bytes per content INSERT
	rows     int
}

func (s *sizeStore) InsertSpans(_ context.Context, rows []schema.Span) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.spans = append(s.spans, RowBytes(ingest.Batch{Spans: rows}))
	s.rows += len(rows)
	return nil
}

func (s *sizeStore) InsertContents(_ context.Context, rows []schema.Content) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.contents = append(s.contents, RowBytes(ingest.Batch{Contents: rows}))
	s.rows += len(rows)
	return nil
}

// bigRows returns n spans, each with one content row; every span and every
// content row is exactly size bytes of row data (size ≥ 1024).
func bigRows(n int, size int64) ingest.Batch {
	var b ingest.Batch
	for range n {
		sp := schema.Span{Project: "p", AttrKeys: []string{"big"}, AttrValues: []string{""}}
		sp.AttrValues[0] = strings.Repeat("a", int(size-sp.DataBytes()))
		c := schema.Content{Project: "p", Kind: schema.ContentToolResult}
		c.Value = strings.Repeat("r", int(size-c.DataBytes()))
		b.Spans = append(b.Spans, sp)
		b.Contents = append(b.Contents, c)
	}
	return b
}

func TestInsertsBoundedByBytes(t *testing.T) {
	const row = 64 << 10
	tests := []struct {
		name    string
		limit   int64
		rows    int
		perPart int // rows per INSERT, the last one may have fewer
	}{
		{"limit of exactly 4 rows", 4 * row, 10, 4},
		{"a byte short of 4 rows", 4*row - 1, 10, 3},
		{"a byte over 4 rows", 4*row + 1, 10, 4},
		{"limit of one row", row, 3, 1},
		{"rows larger than the limit go alone", row / 2, 3, 1},
		{"all rows fit", 100 * row, 10, 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := &sizeStore{}
			w := start(t, store, Config{MaxBatchSpans: 1000, MaxBatchBytes: tt.limit, AckTimeout: 10 * time.Second})
			if err := w.Accept(context.Background(), bigRows(tt.rows, row)); err != nil {
				t.Fatalf("Accept: %v", err)
			}
			store.mu.Lock()
			defer store.mu.Unlock()
			if store.rows != 2*tt.rows {
				t.Fatalf("inserted %d rows, want %d", store.rows, 2*tt.rows)
			}
			wantParts := (tt.rows + tt.perPart - 1) / tt.perPart
			for table, sizes := range map[string][]int64{"spans": store.spans, "contents": store.contents} {
				if len(sizes) != wantParts {
					t.Errorf("%s: %d INSERTs %v, want %d of up to %d rows", table, len(sizes), sizes, wantParts, tt.perPart)
				}
				for _, n := range sizes {
					if n > max(tt.limit, row) {
						t.Errorf("%s: an INSERT of %d bytes, over the limit of %d", table, n, tt.limit)
					}
				}
			}
		})
	}
}

func TestHalfBatchOfBytesIsWrittenAtOnce(t *testing.T) {
	// The flush interval is an hour, and 2 spans are far from half of
	// MaxBatchSpans: the request is acknowledged within its ack timeout only
	// if its bytes make it written at once.
	const row = 64 << 10
	tests := []struct {
		name    string
		limit   int64
		written bool
	}{
		// The request is 2 spans and 2 content rows of row bytes each: 4·row.
		{"exactly half the limit", 8 * row, true},
		{"over the limit", 2 * row, true},
		{"a byte under half the limit", 8*row + 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := &sizeStore{}
			w := start(t, store, Config{MaxBatchSpans: 1000, MaxBatchBytes: tt.limit, FlushInterval: time.Hour,
				AckTimeout: time.Second})
			err := w.Accept(context.Background(), bigRows(2, row))
			if tt.written != (err == nil) {
				t.Fatalf("Accept: %v, want written at once %v", err, tt.written)
			}
		})
	}
}
