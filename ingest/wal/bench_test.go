package wal

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tallyhq/tally/ingest"
	"github.com/tallyhq/tally/ingest/rowcodec"
	"github.com/tallyhq/tally/schema"
)

// benchBatch is a 512-span batch shaped like GenAI traffic (a dozen span
// attributes, four resource attributes, two events, usage and cost).
func benchBatch() ingest.Batch {
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var b ingest.Batch
	for i := range 512 {
		trace, span := fmt.Sprintf("%032x", i/8+1), fmt.Sprintf("%016x", i+1)
		ns := uint64(start.UnixNano()) + uint64(i)*1_000_000
		b.Spans = append(b.Spans, schema.Span{
			Project: "default", TraceID: trace, SpanID: span, ParentSpanID: fmt.Sprintf("%016x", i/8*8+1),
			Start: start, StartNs: ns, EndNs: ns + 850_000_000, DurationNs: 850_000_000,
			Name: "chat gpt-4o", Kind: "client", Status: "ok", Service: "travel-agent",
			ScopeName: "opentelemetry.instrumentation.openai", ScopeVersion: "0.48.0",
			SpanType: schema.TypeInference, Operation: "chat", Provider: "openai",
			RequestModel: "gpt-4o", ResponseModel: "gpt-4o-2024-08-06", Model: "gpt-4o-2024-08-06",
			AgentName: "planner", ConversationID: "conv-" + trace[:8], FinishReasons: []string{"stop"},
			InputTokens: 1200, CacheReadTokens: 1024, OutputTokens: 310, UsageMode: schema.UsageInclusive,
			CostTotal: 0.00482, CostSource: schema.CostCatalog, PriceEntry: "openai/gpt-4o", PriceVersion: "2026-02-01",
			AttrKeys: []string{"gen_ai.request.temperature", "gen_ai.request.max_tokens", "gen_ai.response.id",
				"http.status_code", "server.address", "llm.is_streaming", "gen_ai.openai.api_base", "retry.count",
				"session.id", "deployment.id", "gen_ai.request.top_p", "gen_ai.system"},
			AttrValues: []string{"0.2", "1024", "chatcmpl-" + span, "200", "api.openai.com", "false",
				"https://api.openai.com/v1", "0", "sess-" + trace[:6], "dep-3", "1", "openai"},
			ResourceKeys:   []string{"service.name", "service.version", "telemetry.sdk.language", "host.name"},
			ResourceValues: []string{"travel-agent", "1.4.2", "python", "worker-3"},
			EventNames:     []string{"gen_ai.content.prompt", "gen_ai.content.completion"},
			EventTimeNs:    []uint64{ns + 1000, ns + 849_000_000},
			EventAttrs:     []string{`{"n":"1"}`, `{"n":"2"}`},
			IngestedAt:     start.Add(time.Second),
			Version:        uint64(ns),
		})
	}
	return b
}

// BenchmarkAppend measures the durable log's throughput for encoded
// 512-span batches, with and without fsync, at 1 and 8 concurrent
// appenders: the cost of "acknowledged means on disk".
func BenchmarkAppend(b *testing.B) {
	rec := rowcodec.Encode(nil, benchBatch())
	for _, fsync := range []bool{true, false} {
		for _, conc := range []int{1, 8} {
			name := fmt.Sprintf("fsync=%t/conc=%d", fsync, conc)
			b.Run(name, func(b *testing.B) { benchAppend(b, rec, !fsync, conc) })
		}
	}
}

func benchAppend(b *testing.B, rec []byte, noSync bool, conc int) {
	l, err := Open(b.TempDir(), Options{NoSync: noSync})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	b.SetBytes(int64(len(rec)))
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for range conc {
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				seq, err := l.Append(context.Background(), rec)
				if err != nil {
					b.Error(err)
					return
				}
				if seq%32 == 0 { // keep the disk footprint bounded
					if err := l.Truncate(seq); err != nil {
						b.Error(err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(512*b.N)/elapsed.Seconds(), "spans/s")
	if s := l.Syncs(); s > 0 {
		b.ReportMetric(float64(b.N)/float64(s), "appends/fsync")
	}
}
