package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/tallyhq/tally/internal/tallytest"
	"github.com/tallyhq/tally/query"
	"github.com/tallyhq/tally/schema"
)

var runBase = time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)

// apiSpan is a span of project "default" (the unauthenticated server's)
// starting at runBase+at, lasting dur, with parent "" for a root.
func apiSpan(trace, id, parent, typ string, at, dur time.Duration, status string) schema.Span {
	start := runBase.Add(at)
	if parent != "" {
		parent = fmt.Sprintf("%016s", parent)
	}
	return schema.Span{
		Project: "default", TraceID: fmt.Sprintf("%032s", trace), SpanID: fmt.Sprintf("%016s", id),
		ParentSpanID: parent, Start: start.Truncate(time.Second), StartNs: uint64(start.UnixNano()),
		EndNs: uint64(start.Add(dur).UnixNano()), DurationNs: uint64(dur), Name: typ + " " + id,
		SpanType: typ, Status: status, IngestedAt: start, Version: 1,
	}
}

// startRuns starts a tally holding spans and returns its URL.
func startRuns(t *testing.T, spans []schema.Span) string {
	t.Helper()
	tally := tallytest.Start(t)
	if err := tally.Store.InsertSpans(context.Background(), spans); err != nil {
		t.Fatal(err)
	}
	return tally.URL
}

// getRuns GETs /api/v1/runs with q and decodes the page.
func getRuns(t *testing.T, base string, q url.Values) query.RunPage {
	t.Helper()
	code, _, body := get(t, base+"/api/v1/runs?"+q.Encode(), "")
	if code != http.StatusOK {
		t.Fatalf("runs?%s: %d %s", q.Encode(), code, body)
	}
	var page query.RunPage
	if err := json.Unmarshal(body, &page); err != nil {
		t.Fatal(err)
	}
	return page
}

// TestRunListWindowIsRunStart: /runs?since= lists the runs that started in
// the window, each whole.
//
// Run "early" starts at 0 (root 0–20 min) with a chat at 12 min ($0.004)
// and a tool at 15 min: 3 spans, $0.004, 20 min. Run "late" starts at 10
// (root 10–11): 1 span. since=10 min lists late only; since=0, until=5 min
// lists early whole: 3 spans, $0.004, duration 1,200,000 ms, named by its
// root.
func TestRunListWindowIsRunStart(t *testing.T) {
	m := time.Minute
	chat := apiSpan("early", "e1", "e0", schema.TypeInference, 12*m, m, "ok")
	chat.UsageMode, chat.InputTokens, chat.OutputTokens = schema.UsageInclusive, 1000, 100
	chat.CostTotal, chat.CostSource = 0.004, schema.CostCatalog
	base := startRuns(t, []schema.Span{
		apiSpan("early", "e0", "", schema.TypeAgent, 0, 20*m, "ok"),
		chat,
		apiSpan("early", "e2", "e0", schema.TypeTool, 15*m, m, "ok"),
		apiSpan("late", "l0", "", schema.TypeAgent, 10*m, m, "ok"),
	})
	tests := []struct {
		name, since, until string
		want               []string
	}{
		{"since 10", "2026-11-02T09:10:00Z", "", []string{"late"}},
		{"0 to 5", "2026-11-02T09:00:00Z", "2026-11-02T09:05:00Z", []string{"early"}},
		{"both", "2026-11-02T08:00:00Z", "", []string{"late", "early"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := url.Values{"since": {tt.since}}
			if tt.until != "" {
				q.Set("until", tt.until)
			}
			page := getRuns(t, base, q)
			var got []string
			for _, r := range page.Runs {
				got = append(got, r.TraceID)
				if r.TraceID == fmt.Sprintf("%032s", "early") &&
					(r.Spans != 3 || r.Cost.Total != 0.004 || r.DurationMs != 1200000 || r.Name != "agent e0") {
					t.Errorf("early: %d spans, $%v, %v ms, %q; want 3, 0.004, 1200000, agent e0", r.Spans, r.Cost.Total, r.DurationMs, r.Name)
				}
			}
			var want []string
			for _, id := range tt.want {
				want = append(want, fmt.Sprintf("%032s", id))
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("runs %v, want %v", got, want)
			}
		})
	}
}
