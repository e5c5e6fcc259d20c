package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
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

// TestRunStatusAndErrors: status is the run's outcome, errors and
// recovered_errors count error spans, and all three filter the list.
//
// Trace ids fa11 (failed), bec0 (recovered), c1ea (clean):
//
//	fail:  root 0–1 min error, tool 0–1 error → error, 2 errors, 0 recovered
//	recov: root 2–3 ok, tool 2–3 error, tool 2.5–3 ok → ok, 1 error, 1 recovered
//	clean: root 4–5 ok                             → ok, 0 errors
func TestRunStatusAndErrors(t *testing.T) {
	m, s := time.Minute, 30*time.Second
	base := startRuns(t, []schema.Span{
		apiSpan("fa11", "f0", "", schema.TypeAgent, 0, m, "error"),
		apiSpan("fa11", "f1", "f0", schema.TypeTool, 0, m, "error"),
		apiSpan("bec0", "r0", "", schema.TypeAgent, 2*m, m, "ok"),
		apiSpan("bec0", "r1", "r0", schema.TypeTool, 2*m, s, "error"),
		apiSpan("bec0", "r2", "r0", schema.TypeTool, 2*m+s, s, "ok"),
		apiSpan("c1ea", "c0", "", schema.TypeAgent, 4*m, m, "ok"),
	})
	type outcome struct {
		Status          query.RunStatus `json:"status"`
		Errors          int             `json:"errors"`
		RecoveredErrors int             `json:"recovered_errors"`
	}
	want := map[string]outcome{"fa11": {"error", 2, 0}, "bec0": {"ok", 1, 1}, "c1ea": {"ok", 0, 0}}
	for name, w := range want {
		code, _, body := get(t, base+"/api/v1/runs/"+fmt.Sprintf("%032s", name), "")
		var d struct{ Summary outcome }
		if err := json.Unmarshal(body, &d); code != http.StatusOK || err != nil {
			t.Fatalf("run %s: %d %s", name, code, body)
		}
		if d.Summary != w {
			t.Errorf("GET /runs/%s: %+v, want %+v", name, d.Summary, w)
		}
	}
	tests := []struct {
		query string
		want  []string // newest first
	}{
		{"", []string{"c1ea", "bec0", "fa11"}},
		{"status=error", []string{"fa11"}},
		{"status=ok", []string{"c1ea", "bec0"}},
		{"has_errors=true", []string{"bec0", "fa11"}},
		{"has_errors=false", []string{"c1ea"}},
		{"has_recovered_errors=true", []string{"bec0"}},
		{"has_recovered_errors=false", []string{"c1ea", "fa11"}},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			q, err := url.ParseQuery(tt.query)
			if err != nil {
				t.Fatal(err)
			}
			page := getRuns(t, base, q)
			var got []string
			for _, r := range page.Runs {
				name := strings.TrimLeft(r.TraceID, "0")
				got = append(got, name)
				if o := (outcome{r.Status, r.Errors, r.RecoveredErrors}); o != want[name] {
					t.Errorf("listed %s: %+v, want %+v", name, o, want[name])
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("runs %v, want %v", got, tt.want)
			}
		})
	}
	for _, bad := range []string{"has_errors=yes", "has_recovered_errors=1", "status=recovered"} {
		if code, _, body := get(t, base+"/api/v1/runs?"+bad, ""); code != http.StatusBadRequest {
			t.Errorf("runs?%s: %d %s, want 400", bad, code, body)
		}
	}
}

// TestRunListSortsAcrossPages pages through /runs one run at a time under
// each sort. Three runs (trace ids a1, b2, c3), minutes from runBase:
//
//	run  start  duration  cost    tokens  errors  retries
//	a1   0      3 min     $0.002  150     0       1 (a tool span with attempt 2)
//	b2   1      1 min     $0.005  150     1       0
//	c3   2      2 min     $0      0       2       1 (its second call of the unnamed tool follows
//	                                               the failed first: retry_after_error)
func TestRunListSortsAcrossPages(t *testing.T) {
	m := time.Minute
	chat := func(trace, id, parent string, at time.Duration, in, out uint64, cost float64) schema.Span {
		s := apiSpan(trace, id, parent, schema.TypeInference, at, time.Second, "ok")
		s.UsageMode, s.InputTokens, s.OutputTokens = schema.UsageInclusive, in, out
		s.CostTotal, s.CostSource = cost, schema.CostCatalog
		return s
	}
	retry := apiSpan("a1", "a3", "a0", schema.TypeTool, 2*m, time.Second, "ok")
	retry.ToolName, retry.Attempt = "search", 2
	base := startRuns(t, []schema.Span{
		apiSpan("a1", "a0", "", schema.TypeAgent, 0, 3*m, "ok"),
		chat("a1", "a2", "a0", m, 100, 50, 0.002),
		retry,
		apiSpan("b2", "b0", "", schema.TypeAgent, m, m, "ok"),
		chat("b2", "b1", "b0", m, 120, 30, 0.005),
		apiSpan("b2", "b3", "b0", schema.TypeTool, m, time.Second, "error"),
		apiSpan("c3", "c0", "", schema.TypeAgent, 2*m, 2*m, "ok"),
		apiSpan("c3", "c1", "c0", schema.TypeTool, 2*m, time.Second, "error"),
		apiSpan("c3", "c2", "c0", schema.TypeTool, 2*m+time.Second, time.Second, "error"),
	})
	tests := []struct{ sort, dir, want string }{
		{"", "", "c3 b2 a1"},
		{"start", "asc", "a1 b2 c3"},
		{"duration", "desc", "a1 c3 b2"},
		{"duration", "asc", "b2 c3 a1"},
		{"cost", "desc", "b2 a1 c3"},
		{"cost", "asc", "c3 a1 b2"},
		{"tokens", "desc", "b2 a1 c3"}, // 150 and 150: b2 > a1
		{"tokens", "asc", "c3 a1 b2"},
		{"errors", "desc", "c3 b2 a1"},
		{"errors", "asc", "a1 b2 c3"},
		{"retries", "desc", "c3 a1 b2"}, // 1 and 1: c3 > a1, then 0
		{"retries", "asc", "b2 a1 c3"},
	}
	for _, tt := range tests {
		t.Run(tt.sort+" "+tt.dir, func(t *testing.T) {
			q := url.Values{"limit": {"1"}, "since": {"2026-11-02T08:00:00Z"}}
			if tt.sort != "" {
				q.Set("sort", tt.sort)
				q.Set("dir", tt.dir)
			}
			var got []string
			for range 4 {
				page := getRuns(t, base, q)
				for _, r := range page.Runs {
					got = append(got, strings.TrimLeft(r.TraceID, "0"))
				}
				if page.NextCursor == "" {
					break
				}
				q.Set("cursor", page.NextCursor)
			}
			if g := strings.Join(got, " "); g != tt.want {
				t.Errorf("order %q, want %q", g, tt.want)
			}
		})
	}
	for _, bad := range []string{"sort=name", "dir=sideways", "sort=cost&cursor=" + url.QueryEscape(getRuns(t, base, url.Values{"limit": {"1"}}).NextCursor)} {
		if code, _, body := get(t, base+"/api/v1/runs?"+bad, ""); code != http.StatusBadRequest {
			t.Errorf("runs?%s: %d %s, want 400", bad, code, body)
		}
	}
}
