package api_test

import (
	"encoding/json"
	"math"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/tallyhq/tally/api"
	"github.com/tallyhq/tally/internal/tallytest"
)

// TestCostsComparePrevious: compare=previous adds the report of the period
// of the same length just before. One SendAgentRun run 90 minutes ago (the
// previous hour) and two 30 minutes ago (this hour); each run spends
// $0.00234 under planner (claude) and $0.005125 under researcher (gpt-4o).
func TestCostsComparePrevious(t *testing.T) {
	tally := tallytest.Start(t)
	now := time.Now().Truncate(time.Millisecond)
	tallytest.SendAgentRun(t, tally.URL, tallytest.AgentRun{Base: now.Add(-90 * time.Minute)})
	tallytest.SendAgentRun(t, tally.URL, tallytest.AgentRun{Base: now.Add(-30 * time.Minute)})
	tallytest.SendAgentRun(t, tally.URL, tallytest.AgentRun{Base: now.Add(-29 * time.Minute)})

	code, _, body := get(t, tally.URL+"/api/v1/costs?by=agent&since=1h&compare=previous", "")
	if code != http.StatusOK {
		t.Fatalf("costs: %d %s", code, body)
	}
	var rep api.CostComparison
	if err := json.Unmarshal(body, &rep); err != nil {
		t.Fatal(err)
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	if rep.Previous == nil {
		t.Fatalf("no previous period: %s", body)
	}
	if d := rep.Until.Sub(rep.Since); rep.Previous.Until != rep.Since || rep.Previous.Until.Sub(rep.Previous.Since) != d {
		t.Errorf("previous period %s–%s, want the %s before %s", rep.Previous.Since, rep.Previous.Until, d, rep.Since)
	}
	if !near(rep.Total.Cost.Total, 2*0.007465) || !near(rep.Previous.Total.Cost.Total, 0.007465) {
		t.Errorf("totals: now $%v, previous $%v; want $0.01493 and $0.007465", rep.Total.Cost.Total, rep.Previous.Total.Cost.Total)
	}
	want := map[string][2]float64{"planner": {2 * 0.00234, 0.00234}, "researcher": {2 * 0.005125, 0.005125}}
	prev := map[string]float64{}
	for _, g := range rep.Previous.Groups {
		prev[g.Key] = g.Cost.Total
	}
	for _, g := range rep.Groups {
		w, ok := want[g.Key]
		if !ok || !near(g.Cost.Total, w[0]) || !near(prev[g.Key], w[1]) {
			t.Errorf("group %s: now $%v, previous $%v; want %v", g.Key, g.Cost.Total, prev[g.Key], w)
		}
	}
	if len(rep.Groups) != 2 {
		t.Errorf("%d groups, want planner and researcher", len(rep.Groups))
	}
	if code, _, body := get(t, tally.URL+"/api/v1/costs?compare=last_year", ""); code != http.StatusBadRequest {
		t.Errorf("compare=last_year: %d %s, want 400", code, body)
	}
	// Without compare there is no previous period.
	var plain api.CostComparison
	if _, _, body := get(t, tally.URL+"/api/v1/costs?since=1h", ""); json.Unmarshal(body, &plain) != nil || plain.Previous != nil {
		t.Errorf("costs without compare: %s, want no previous", body)
	}
}

// TestCostsFilters: agent, service and user narrow the report to their
// spans, the previous period too. Same runs as TestCostsComparePrevious:
// researcher spends $0.005125 a run, planner $0.00234; the service is
// support-bot; no span names a user.
func TestCostsFilters(t *testing.T) {
	tally := tallytest.Start(t)
	now := time.Now().Truncate(time.Millisecond)
	tallytest.SendAgentRun(t, tally.URL, tallytest.AgentRun{Base: now.Add(-90 * time.Minute)})
	tallytest.SendAgentRun(t, tally.URL, tallytest.AgentRun{Base: now.Add(-30 * time.Minute)})
	tallytest.SendAgentRun(t, tally.URL, tallytest.AgentRun{Base: now.Add(-29 * time.Minute)})
	for _, c := range []struct {
		query     string
		now, prev float64
		groups    []string // by=model, costliest first; "" holds the agent and tool spans
	}{
		{"agent=researcher", 2 * 0.005125, 0.005125, []string{"gpt-4o", ""}},
		{"agent=planner", 2 * 0.00234, 0.00234, []string{"claude-sonnet-4-5", ""}},
		{"service=support-bot", 2 * 0.007465, 0.007465, []string{"gpt-4o", "claude-sonnet-4-5", ""}},
		{"service=billing", 0, 0, nil},
		{"user=u-1", 0, 0, nil},
		{"agent=researcher&service=support-bot", 2 * 0.005125, 0.005125, []string{"gpt-4o", ""}},
	} {
		code, _, body := get(t, tally.URL+"/api/v1/costs?by=model&since=1h&compare=previous&"+c.query, "")
		var rep api.CostComparison
		if code != http.StatusOK || json.Unmarshal(body, &rep) != nil || rep.Previous == nil {
			t.Fatalf("%s: %d %s", c.query, code, body)
		}
		if math.Abs(rep.Total.Cost.Total-c.now) > 1e-9 || math.Abs(rep.Previous.Total.Cost.Total-c.prev) > 1e-9 {
			t.Errorf("%s: now $%v, previous $%v; want $%v, $%v", c.query, rep.Total.Cost.Total, rep.Previous.Total.Cost.Total, c.now, c.prev)
		}
		var keys []string
		for _, g := range rep.Groups {
			keys = append(keys, g.Key)
		}
		if !reflect.DeepEqual(keys, c.groups) {
			t.Errorf("%s: groups %v, want %v", c.query, keys, c.groups)
		}
	}
}
