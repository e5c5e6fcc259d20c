package query_test

import (
	"context"
	"testing"

	"github.com/tallyhq/tally/ingest"
	"github.com/tallyhq/tally/query"
	"github.com/tallyhq/tally/schema"
)

// TestExplainCountsAClientCostWithoutUsage: a paid tool call whose client
// sent its cost (no usage) counts in the run's cost, and the explanation
// says so.
func TestExplainCountsAClientCostWithoutUsage(t *testing.T) {
	store := openStore(t)
	start := mustTime(t, "2026-06-01T10:00:00Z")
	tool := schema.Span{Project: "p", TraceID: "000000000000000000000000000000c1", SpanID: "00000000000000c1",
		Start: start, StartNs: uint64(start.UnixNano()), EndNs: uint64(start.UnixNano()) + 1e9, DurationNs: 1e9,
		Name: "execute_tool search", Kind: "internal", Status: "ok", SpanType: schema.TypeTool, ToolName: "search",
		CostTotal: 0.002, CostSource: schema.CostClient, AttrKeys: []string{"operation.cost"}, AttrValues: []string{"0.002"}}
	insert(t, store, []schema.Span{tool}, 1)
	out, err := query.NewExplainer(query.NewReader(store), ingest.Options{}).Explain(context.Background(), "p", tool.TraceID, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 1 || !out[0].Counted || out[0].CountedWhy != "a cost on a span without usage always counts" || out[0].CostSource != schema.CostClient {
		t.Errorf("explanation %+v: want counted, a client cost without usage", out)
	}
}
