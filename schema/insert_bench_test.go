package schema_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tallyhq/tally/internal/testenv"
	"github.com/tallyhq/tally/schema"
)

// BenchmarkInsertSpans inserts 10,000 spans shaped like an agent's (20
// attributes, 8 resource attributes, two events; 11 MB of row data) per op
// into the test store, sent in blocks of Config.BlockBytes: the writer's
// INSERT path, client and server. Compare the client's CPU (-cpuprofile)
// and B/op between block sizes; 16 MiB is one block.
func BenchmarkInsertSpans(b *testing.B) {
	db := testenv.NewStoreDatabase(b)
	ctx := context.Background()
	for _, block := range []int64{256 << 10, 1 << 20, 4 << 20, 16 << 20} {
		b.Run(fmt.Sprintf("block=%dKiB", block>>10), func(b *testing.B) {
			cfg := db.StoreConfig()
			cfg.BlockBytes = block
			benchmarkInsertSpans(ctx, b, cfg)
		})
	}
}

func benchmarkInsertSpans(ctx context.Context, b *testing.B, cfg schema.Config) {
	s := openConfig(b, cfg, true)
	rows := make([]schema.Span, 10000)
	start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	var keys, values, resKeys, resValues []string
	for i := range 20 {
		keys, values = append(keys, fmt.Sprintf("gen_ai.attribute.%02d", i)), append(values, fmt.Sprintf("value %d", i))
	}
	for i := range 8 {
		resKeys, resValues = append(resKeys, fmt.Sprintf("resource.%d", i)), append(resValues, fmt.Sprintf("resource value %d", i))
	}
	for i := range rows {
		rows[i] = schema.Span{Project: "bench", TraceID: fmt.Sprintf("%032x", i/20), SpanID: fmt.Sprintf("%016x", i),
			Start: start, StartNs: uint64(start.UnixNano()) + uint64(i), EndNs: uint64(start.UnixNano()) + uint64(i) + 1000,
			Name: "chat claude-sonnet-4", SpanType: "inference", Model: "claude-sonnet-4", Provider: "anthropic",
			AttrKeys: keys, AttrValues: values, ResourceKeys: resKeys, ResourceValues: resValues,
			EventNames: []string{"gen_ai.choice", "gen_ai.user.message"}, EventTimeNs: []uint64{1, 2},
			EventAttrs: []string{`{"a":1}`, `{"b":2}`}, InputTokens: 1200, OutputTokens: 300, Version: 1}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := s.InsertSpans(ctx, rows); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(rows)*b.N)/b.Elapsed().Seconds(), "spans/s")
}
