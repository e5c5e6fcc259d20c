package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tallyhq/tally/internal/tallytest"
)

// TestSearchCLI: `tally search` prints the runs a query matched, with the
// spans that matched and the content around a match; a query that does
// not parse is pointed at. SendAgentRun's run calls web_search with
// {"q":"otel","limit":3} and fetch_url, which fails with error.type
// timeout.
func TestSearchCLI(t *testing.T) {
	tally := tallytest.Start(t)
	base := time.Now().Add(-time.Hour)
	id := tallytest.SendAgentRun(t, tally.URL, tallytest.AgentRun{Base: base})
	var out bytes.Buffer
	if err := runCLI(context.Background(), &out, "search", `{ tool = "fetch_url" && span.error.type = "timeout" }`, "--server", tally.URL); err != nil {
		t.Fatalf("tally search: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), id) || !strings.Contains(out.String(), "MATCHED") {
		t.Fatalf("tally search printed\n%s\nwant run %s", out.String(), id)
	}
	out.Reset()
	if err := runCLI(context.Background(), &out, "search", `{ content contains "OTEL" && tool = "web_search" }`, "--server", tally.URL); err != nil {
		t.Fatalf("tally search: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), `»otel«`) {
		t.Fatalf("tally search printed\n%s\nwant the arguments' match marked »otel«", out.String())
	}
	err := runCLI(context.Background(), &out, "search", `{ tool = }`, "--server", tally.URL)
	if err == nil || !strings.Contains(err.Error(), "{ tool = }\n           ^") {
		t.Fatalf("tally search '{ tool = }': %v, want the position pointed at", err)
	}
}
