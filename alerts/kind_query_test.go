package alerts_test

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/tallyhq/tally/alerts"
	"github.com/tallyhq/tally/internal/tallytest"
	"github.com/tallyhq/tally/query"
)

// TestQueryRuleFires: a query rule pages on a metrics query's series.
// tallytest.SendAgentRun's run calls fetch_url once, failing (timeout),
// and web_search once, ok: the failed-fetch count by tool is 1 for
// fetch_url, over the threshold 0; web_search has no failure, so no
// series and no alert; the p95 of tool durations (1 s for fetch_url)
// stays under 5 s.
func TestQueryRuleFires(t *testing.T) {
	tally := tallytest.Start(t)
	tallytest.SendAgentRun(t, tally.URL, tallytest.AgentRun{Base: time.Now().Add(-10 * time.Minute)})
	rules := mustRules(t, `
rules:
  - name: FetchFails
    kind: query
    query: '{ tool = "fetch_url" && status = error } | count_over_time() by (tool)'
    threshold: 0
    window: 1h
  - name: SearchFails
    kind: query
    query: '{ tool = "web_search" && status = error } | count_over_time() by (tool)'
    window: 1h
  - name: SlowTools
    kind: query
    query: '{ tool != nil } | quantile_over_time(duration, .95) by (tool)'
    threshold: 5
    window: 1h
`)
	ev := startEvaluator(t, alerts.Config{Rules: rules, Source: query.NewReader(tally.Store),
		ExternalURL: "http://tally.example", Projects: []string{"default"}})
	if err := ev.Evaluate(context.Background()); err != nil {
		t.Fatal(err)
	}
	list := ev.Alerts("default")
	if len(list) != 1 {
		t.Fatalf("%d alerts, want 1: %+v", len(list), list)
	}
	a := list[0]
	wantSummary := `{ tool = "fetch_url" && status = error } | count_over_time() by (tool) for tool=fetch_url: 1 > 0 (count_over_time over 1h)`
	if a.Rule != "FetchFails" || a.State != alerts.StateFiring || a.Labels["tool"] != "fetch_url" || a.Annotations["summary"] != wantSummary {
		t.Fatalf("alert %s %s labels %v summary %q; want FetchFails firing for fetch_url, %q", a.Rule, a.State, a.Labels, a.Annotations["summary"], wantSummary)
	}
	// The alert links to the runs its query's span set finds.
	u, err := url.Parse(a.GeneratorURL)
	if err != nil || u.Path != "/runs" || u.Query().Get("query") != `{ tool = "fetch_url" && status = error }` {
		t.Fatalf("generator URL %q", a.GeneratorURL)
	}
}

// TestQueryRuleErrors: a query rule needs a metrics query that parses; no
// other kind takes one.
func TestQueryRuleErrors(t *testing.T) {
	for _, tc := range []struct{ rule, want string }{
		{`{name: A, kind: query}`, "query: required"},
		{`{name: A, kind: query, query: '{ tool = }'}`, "expected a field or a value"},
		{`{name: A, kind: query, query: '{ tool = "x" }'}`, "not a metrics query"},
		{`{name: A, kind: tool_retry_rate, query: '{ } | rate()'}`, "only query takes a query"},
		{`{name: A, kind: query, query: '{ } | rate()', threshold: -1}`, "threshold"},
	} {
		_, err := alerts.ParseRules([]byte("rules:\n  - " + tc.rule + "\n"))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.rule, err, tc.want)
		}
	}
}
