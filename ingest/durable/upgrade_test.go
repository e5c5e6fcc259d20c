package durable

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"

	"github.com/tallyhq/tally/schema"
)

// TestReplaysAnOlderBuildsLog: records the previous build left pending in
// the log (format version 3, every string written out: a record of the
// rowcodec tests' sample batch of 24 spans, written by that encoder) are
// replayed by this build at start, in order, every row as that build wrote
// it, and this build's own records (version 4) follow them.
func TestReplaysAnOlderBuildsLog(t *testing.T) {
	old, err := os.ReadFile("../rowcodec/testdata/version3.bin")
	if err != nil {
		t.Fatal(err)
	}
	if old[0] != 3 {
		t.Fatalf("the older build's record is of version %d, want 3", old[0])
	}
	dir := t.TempDir()
	before := openSink(t, dir, newFakeDown(0, nil), fastConfig())
	for range 2 {
		if err := before.Requeue(context.Background(), old); err != nil {
			t.Fatal(err)
		}
	}
	if err := before.Close(); err != nil {
		t.Fatal(err)
	}

	down := newFakeDown(0, nil)
	s := openSink(t, dir, down, fastConfig())
	defer s.Close()
	stop := run(t, s)
	accept(t, s, batchOf(1000, 5))
	eventually(t, "both old records and the new one downstream", func() bool { return len(down.spanIDs()) == 53 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	// The sample batch's span ids are 1 to 24 in hex, twice; then the new
	// record's.
	var want []string
	for range 2 {
		for i := 1; i <= 24; i++ {
			want = append(want, fmt.Sprintf("%016x", i))
		}
	}
	want = append(want, spanIDRange(1000, 5)...)
	if got := down.spanIDs(); !slices.Equal(got, want) {
		t.Fatalf("spans downstream %v,\nwant %v", got, want)
	}
	down.mu.Lock()
	defer down.mu.Unlock()
	first, tool := down.spans[0], down.spans[3] // every fourth sample span is a tool call
	if first.ScopeName != "opentelemetry.instrumentation.openai" || first.Model != "gpt-4o-2024-08-06" ||
		first.InputTokens != 1200 || first.CostTotal != 0.00482 || len(first.AttrKeys) != 12 ||
		first.AttrKeys[11] != "gen_ai.system" || first.AttrValues[11] != "openai" || first.ResourceValues[3] != "worker-3" {
		t.Errorf("the first replayed span differs from what the older build wrote: %+v", first)
	}
	if tool.ToolName != "search_flights" || tool.SpanType != schema.TypeTool || tool.Attempt != 1 {
		t.Errorf("the fourth replayed span is not the sample's tool call: %+v", tool)
	}
	// Six tool arguments a sample record, and the new record's five results.
	if len(down.contents) != 17 || down.contents[0].Value != `{"from":"SFO","to":"NRT","date":"2026-04-02","passengers":2}` ||
		down.contents[0].SpanID != fmt.Sprintf("%016x", 4) {
		t.Errorf("contents downstream: %d, the first %+v", len(down.contents), down.contents[0])
	}
}
