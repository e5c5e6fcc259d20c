package api_test

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"testing"

	"github.com/tallyhq/tally/internal/tallytest"
	"github.com/tallyhq/tally/query"
	"github.com/tallyhq/tally/tools/demo"
)

// TestBigRunInList: a run of 10,000 spans is listed, and its list figures
// (the SQL counting rule) equal its detail's (the Go rule). The counting
// SQL once compared every pair of a run's calls inside ClickHouse and
// exceeded the query memory limit here, failing the whole list.
func TestBigRunInList(t *testing.T) {
	tally := tallytest.Start(t)
	sum, err := demo.Send(context.Background(), demo.Config{Endpoint: tally.URL, Runs: 1, Seed: 11, Spans: 10000})
	if err != nil {
		t.Fatal(err)
	}
	id := sum.TraceIDs[0]
	code, _, body := get(t, tally.URL+"/api/v1/runs?since=400d", "")
	if code != http.StatusOK {
		t.Fatalf("run list: %d %s", code, body)
	}
	var page query.RunPage
	if err := json.Unmarshal(body, &page); err != nil || len(page.Runs) != 1 || page.Runs[0].TraceID != id {
		t.Fatalf("run list: %v %.300s", err, body)
	}
	code, _, body = get(t, tally.URL+"/api/v1/runs/"+id, "")
	if code != http.StatusOK {
		t.Fatalf("run: %d %.300s", code, body)
	}
	var d query.RunDetail
	if err := json.Unmarshal(body, &d); err != nil {
		t.Fatal(err)
	}
	l, g := page.Runs[0], d.Summary
	if l.Spans != 10000 || g.Spans != 10000 {
		t.Errorf("spans: list %d, detail %d; want 10000", l.Spans, g.Spans)
	}
	if l.LLMCalls != g.LLMCalls || l.Usage != g.Usage || math.Abs(l.Cost.Total-g.Cost.Total) > 1e-9 {
		t.Errorf("list and detail disagree:\n list   calls %d usage %+v cost %v\n detail calls %d usage %+v cost %v",
			l.LLMCalls, l.Usage, l.Cost.Total, g.LLMCalls, g.Usage, g.Cost.Total)
	}
}
