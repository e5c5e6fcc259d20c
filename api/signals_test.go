package api_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/tallyhq/tally/internal/tallytest"
	"github.com/tallyhq/tally/query"
	"github.com/tallyhq/tally/safety"
)

// TestRunSafetySignals: tallytest.SendSafetyRun's run (the real OTel Go
// SDK) under its policy: a charge succeeding twice for one step, a refund
// retried after a timeout, a read retried after a timeout and an
// idempotent upsert twice. The run's summary lists exactly the two signals, pointing at the later
// spans; the tool nodes carry their effect class and terminal status.
func TestRunSafetySignals(t *testing.T) {
	policy, err := safety.ParsePolicy(tallytest.SafetyPolicy)
	if err != nil {
		t.Fatal(err)
	}
	tally := tallytest.Start(t, func(o *tallytest.Config) { o.Reader = query.NewReader(o.Store, query.WithToolEffects(policy)) })
	id, ids := tallytest.SendSafetyRun(t, tally.URL, time.Now().Add(-time.Hour).Truncate(time.Millisecond))

	code, _, b := get(t, tally.URL+"/api/v1/runs/"+id, "")
	var d query.RunDetail
	if code != http.StatusOK || json.Unmarshal(b, &d) != nil {
		t.Fatalf("run: %d %.300s", code, b)
	}
	sigs := d.Summary.Signals
	if len(sigs) != 2 || sigs[0].Kind != safety.KindDuplicateSideEffect || sigs[0].SpanID != ids["charge2"] ||
		sigs[0].Tool != "charge_card" || len(sigs[0].SpanIDs) != 2 || sigs[0].SpanIDs[0] != ids["charge1"] ||
		sigs[1].Kind != safety.KindUnsafeRetry || sigs[1].SpanID != ids["refund2"] || sigs[1].SpanIDs[0] != ids["refund1"] || sigs[1].Reason == "" {
		t.Fatalf("signals %+v", sigs)
	}
	nodes := map[string]*query.SpanNode{}
	for _, c := range d.Roots[0].Children {
		nodes[c.SpanID] = c
	}
	for key, want := range map[string][2]string{
		"charge1": {"irreversible", "ok"}, "refund1": {"non_idempotent", "ambiguous"}, "search1": {"read", "ambiguous"},
		"upsert2": {"idempotent", "ok"},
	} {
		n := nodes[ids[key]]
		if n == nil || string(n.Effect) != want[0] || string(n.StepStatus) != want[1] {
			t.Errorf("%s: effect/status %v, want %v", key, n, want)
		}
	}
	// Read in parts (3 nodes), the review is still the whole run's.
	code, _, b = get(t, tally.URL+"/api/v1/runs/"+id+"?max_nodes=3", "")
	var part query.RunDetail
	if code != http.StatusOK || json.Unmarshal(b, &part) != nil || part.Partial == nil || len(part.Summary.Signals) != 2 {
		t.Errorf("partial run: %d signals %+v", code, part.Summary.Signals)
	}

	// A second run just like it: GET /signals counts both runs' signals by
	// kind and tool, newest run first among the examples.
	id2, _ := tallytest.SendSafetyRun(t, tally.URL, time.Now().Add(-30*time.Minute).Truncate(time.Millisecond))
	code, _, b = get(t, tally.URL+"/api/v1/signals?since=2h", "")
	var rep query.SignalsReport
	if code != http.StatusOK || json.Unmarshal(b, &rep) != nil {
		t.Fatalf("signals: %d %s", code, b)
	}
	if rep.RunsRead != 2 || rep.Signals != 4 || len(rep.Groups) != 2 {
		t.Fatalf("signals report %+v", rep)
	}
	for _, g := range rep.Groups {
		want := map[safety.SignalKind]string{safety.KindDuplicateSideEffect: "charge_card", safety.KindUnsafeRetry: "refund"}[g.Kind]
		if g.Tool != want || g.Signals != 2 || g.Runs != 2 || len(g.ExampleRuns) != 2 || g.ExampleRuns[0] != id2 || g.ExampleRuns[1] != id {
			t.Errorf("group %+v", g)
		}
	}
	for q, want := range map[string]int{"kind=unsafe_retry": 2, "tool=charge_card": 2, "tool=search_docs": 0, "agent=nobody": 0} {
		rep = query.SignalsReport{}
		if code, _, b := get(t, tally.URL+"/api/v1/signals?since=2h&"+q, ""); code != http.StatusOK || json.Unmarshal(b, &rep) != nil || rep.Signals != want {
			t.Errorf("signals?%s: %d, %d signals, want %d", q, code, rep.Signals, want)
		}
	}
	if code, _, _ := get(t, tally.URL+"/api/v1/signals?kind=bogus", ""); code != http.StatusBadRequest {
		t.Errorf("signals?kind=bogus: %d, want 400", code)
	}
}
