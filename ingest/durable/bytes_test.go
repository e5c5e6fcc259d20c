package durable

import (
	"slices"
	"testing"

	"github.com/tallyhq/tally/ingest"
	"github.com/tallyhq/tally/ingest/rowcodec"
)

func TestDrainBatchesBoundedByBytes(t *testing.T) {
	// 20 records of 5 spans wait in the log; every one is rec bytes
	// written out (its header's size, what its rows hold decoded), which
	// bounds a batch, not the record's own, smaller length.
	size := func(b ingest.Batch) (written, out int64) {
		enc := rowcodec.Encode(nil, b)
		_, n, err := rowcodec.Header(enc)
		if err != nil {
			t.Fatal(err)
		}
		return int64(len(enc)), n
	}
	written, rec := size(batchOf(0, 5))
	if written >= rec {
		t.Fatalf("a record of %d bytes, %d written out: the bounds below would not tell them apart", written, rec)
	}
	for i := range 20 {
		if _, n := size(batchOf(i*5, 5)); n != rec {
			t.Fatalf("record %d is %d bytes written out, the first %d", i, n, rec)
		}
	}
	tests := []struct {
		name     string
		maxBytes int64
		first    []int // spans of the first writes
	}{
		{"exactly three records", 3 * rec, []int{15, 15, 15, 15, 15, 15, 10}},
		{"a byte short of three", 3*rec - 1, []int{10, 10, 10, 10, 10, 10, 10, 10, 10, 10}},
		{"a byte over three", 3*rec + 1, []int{15, 15, 15, 15, 15, 15, 10}},
		{"one record", rec, []int{5, 5, 5, 5}},
		{"records larger than the limit go alone", rec / 2, []int{5, 5, 5, 5}},
		{"spans bind first", 100 * rec, []int{50, 50}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			down := newFakeDown(0, nil)
			cfg := fastConfig()
			cfg.MaxBatchSpans = 50
			cfg.MaxBatchBytes = tt.maxBytes
			s := openSink(t, t.TempDir(), down, cfg)
			defer s.Close()
			for i := range 20 {
				accept(t, s, batchOf(i*5, 5))
			}
			stop := run(t, s)
			eventually(t, "100 spans downstream", func() bool { return len(down.spanIDs()) == 100 })
			if err := stop(); err != nil {
				t.Fatalf("Run: %v", err)
			}
			if got := down.spanIDs(); !slices.Equal(got, spanIDRange(0, 100)) {
				t.Fatalf("downstream spans out of order or duplicated: %v", got)
			}
			down.mu.Lock()
			defer down.mu.Unlock()
			if got := down.batches[:min(len(tt.first), len(down.batches))]; !slices.Equal(got, tt.first) {
				t.Fatalf("writes carried %v spans, want %v first", down.batches, tt.first)
			}
		})
	}
}
