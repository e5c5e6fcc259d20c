package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tallyhq/tally/api"
	"github.com/tallyhq/tally/internal/tallytest"
	"github.com/tallyhq/tally/query"
)

// post sends body to url and returns the status and answer.
func post(t *testing.T, url, body string) (int, []byte) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// TestTaskConsistency: eleven runs of one task sent by the real OTel Go
// SDK (tallytest.SendAgentRun: $0.007465, 4 steps, 3,300 tokens each).
// Runs 0–3 carry a gen_ai.evaluation.result event labelled pass, runs 7–8
// one labelled fail; runs 4–6 get passed=true and run 9 passed=false
// through the API (run 9's posted twice: one outcome); run 10 has none.
// So 10 runs are graded, 7 passed, and by hand:
//
//	pass rate 7/10; pass@1 = pass^1 = 0.7
//	pass@3 = 1 − C(3,3)/C(10,3) = 1 − 1/120; pass^3 = C(7,3)/C(10,3) = 35/120
//	cost per success = 10 × 0.007465 / 7 (failures paid for)
//	every run alike: cost p50 0.007465, steps p50 4, tokens 3,300, cv 0;
//	budget 3 × 3,300 = 9,900 tokens, no pass above it
func TestTaskConsistency(t *testing.T) {
	tally := tallytest.Start(t)
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond).UTC()
	var ids []string
	for i := 0; i < 11; i++ {
		run := tallytest.AgentRun{Base: base.Add(time.Duration(i) * 10 * time.Second), Conversation: fmt.Sprintf("c%d", i)}
		switch {
		case i <= 3:
			run.Evaluation = &tallytest.Evaluation{Name: "resolved", Label: "pass"}
		case i == 7 || i == 8:
			run.Evaluation = &tallytest.Evaluation{Name: "resolved", Label: "fail", Explanation: "ticket reopened"}
		}
		ids = append(ids, tallytest.SendAgentRun(t, tally.URL, run))
	}
	for i, id := range ids[4:10] {
		i += 4
		if i == 7 || i == 8 {
			continue
		}
		body := fmt.Sprintf(`{"name":"resolved","passed":%v,"source":"reviewer","explanation":"checked by hand"}`, i != 9)
		if i == 4 {
			body = "[" + body + "]" // a list is accepted too
		}
		for range 2 - min(1, i%9) { // run 9's outcome twice
			if code, b := post(t, tally.URL+"/api/v1/runs/"+id+"/outcomes", body); code != http.StatusOK {
				t.Fatalf("post outcome of run %d: %d %s", i, code, b)
			}
		}
	}
	// A run's outcomes: the posted one once, however often it was posted.
	code, _, b := get(t, tally.URL+"/api/v1/runs/"+ids[9]+"/outcomes", "")
	var outs api.OutcomesReport
	if code != http.StatusOK || json.Unmarshal(b, &outs) != nil || len(outs.Outcomes) != 1 ||
		outs.Outcomes[0].Passed == nil || *outs.Outcomes[0].Passed || outs.Outcomes[0].Source != "reviewer" || outs.Outcomes[0].Origin != "api" {
		t.Errorf("run 9 outcomes: %d %s", code, b)
	}
	// An outcome the span carries, read from its event.
	code, _, b = get(t, tally.URL+"/api/v1/runs/"+ids[7]+"/outcomes", "")
	if code != http.StatusOK || json.Unmarshal(b, &outs) != nil || len(outs.Outcomes) != 1 || outs.Outcomes[0].Origin != "event" ||
		outs.Outcomes[0].Passed == nil || *outs.Outcomes[0].Passed || outs.Outcomes[0].Explanation != "ticket reopened" {
		t.Errorf("run 7 outcomes: %d %s", code, b)
	}

	code, _, b = get(t, tally.URL+"/api/v1/tasks?since=2h", "")
	var rep query.TasksReport
	if code != http.StatusOK || json.Unmarshal(b, &rep) != nil || len(rep.Tasks) != 1 {
		t.Fatalf("tasks: %d %s", code, b)
	}
	task := rep.Tasks[0]
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	if task.Key != "triage_ticket" || task.Runs != 11 || task.Graded != 10 || task.Ungraded != 1 || task.Passed != 7 ||
		task.Failed != 3 || task.VerdictsFrom != "outcomes" || task.PassRate == nil || !near(*task.PassRate, 0.7) {
		t.Errorf("task counts: %+v", task)
	}
	if !near(task.PassAtK["1"], 0.7) || !near(task.PassHatK["1"], 0.7) || !near(task.PassAtK["3"], 1-1.0/120) ||
		!near(task.PassHatK["3"], 35.0/120) || len(task.PassAtK) != 5 {
		t.Errorf("pass@k %v, pass^k %v", task.PassAtK, task.PassHatK)
	}
	if task.CostPerSuccess == nil || !near(*task.CostPerSuccess, 10*0.007465/7) || !near(task.CostUSD.P50, 0.007465) ||
		task.Steps.P50 != 4 || task.Tokens.P50 != 3300 || task.Tokens.CV != 0 || task.BudgetTokens != 9900 || task.OverBudgetPasses != 0 {
		t.Errorf("figures: cost/success %v, cost %+v, steps %+v, tokens %+v, budget %v over %d",
			task.CostPerSuccess, task.CostUSD, task.Steps, task.Tokens, task.BudgetTokens, task.OverBudgetPasses)
	}
	if len(task.FailedRuns) != 3 || task.FailedRuns[0] != ids[9] {
		t.Errorf("failed runs %v, want run 9 first (newest)", task.FailedRuns)
	}
	// Graded by another outcome name: none carries it, so status grades
	// (every run ended ok: 11 of 11).
	code, _, b = get(t, tally.URL+"/api/v1/tasks?since=2h&outcome=other&k=2", "")
	rep = query.TasksReport{} // a fresh answer: Unmarshal merges into maps it finds
	if code != http.StatusOK || json.Unmarshal(b, &rep) != nil || len(rep.Tasks) != 1 || rep.Tasks[0].VerdictsFrom != "status" ||
		rep.Tasks[0].Passed != 11 || len(rep.Tasks[0].PassHatK) != 2 {
		t.Errorf("tasks by another outcome: %d %s", code, b)
	}
	// By agent: every run ran planner and researcher.
	code, _, b = get(t, tally.URL+"/api/v1/tasks?since=2h&by=agent", "")
	rep = query.TasksReport{}
	if code != http.StatusOK || json.Unmarshal(b, &rep) != nil || len(rep.Tasks) != 2 || rep.Tasks[0].Runs != 11 || rep.Tasks[1].Passed != 7 {
		t.Errorf("tasks by agent: %d %s", code, b)
	}

	// Bad input: each refused with its reason, nothing stored.
	url := tally.URL + "/api/v1/runs/" + ids[10] + "/outcomes"
	long := strings.Repeat("x", api.MaxOutcomeField+1)
	for _, c := range []struct {
		body string
		code int
		want string
	}{
		{`{"passed":true}`, 400, "name is required"},
		{`{"name":"x"}`, 400, "give passed, score or label"},
		{`{"name":"` + long + `","passed":true}`, 400, "at most 200 bytes"},
		{`{"name":"x","passed":true,"explanation":"` + strings.Repeat("e", api.MaxOutcomeExplanation+1) + `"}`, 400, "explanation over 4096"},
		{`{"name":"x","passed":true,"span_id":"zz"}`, 400, "span id"},
		// Issue #41: the all-zero span id and a span of no run were taken.
		{`{"name":"x","passed":true,"span_id":"0000000000000000"}`, 400, "all zero is no span"},
		{`{"name":"x","passed":true,"span_id":"00000000000000ff"}`, 400, "is not a span of run"},
		{`[` + strings.TrimSuffix(strings.Repeat(`{"name":"x","passed":true},`, api.MaxOutcomesPerRequest+1), ",") + `]`, 400, "want 1 to 100"},
		{`[]`, 400, "want 1 to 100"},
		{`not json`, 400, "want an outcome object"},
		{`{"name":"x","passed":true,"explanation":"` + strings.Repeat("e", api.MaxOutcomeBody) + `"}`, 413, "over 1048576 bytes"},
	} {
		code, b := post(t, url, c.body)
		if code != c.code || !bytes.Contains(b, []byte(c.want)) {
			t.Errorf("post %.60s…: %d %s, want %d with %q", c.body, code, b, c.code, c.want)
		}
	}
	// At the edges: 200-byte names, a 4,096-byte explanation, 100 outcomes.
	edge := `{"name":"` + long[:api.MaxOutcomeField] + `","passed":true,"explanation":"` + strings.Repeat("e", api.MaxOutcomeExplanation) + `"}`
	if code, b := post(t, url, edge); code != http.StatusOK {
		t.Errorf("post at the limits: %d %s", code, b)
	}
	var many []string
	for i := range api.MaxOutcomesPerRequest {
		many = append(many, fmt.Sprintf(`{"name":"n%d","score":%d}`, i, i))
	}
	if code, b := post(t, url, "["+strings.Join(many, ",")+"]"); code != http.StatusOK {
		t.Errorf("post 100 outcomes: %d %.200s", code, b)
	}
	if code, b := post(t, tally.URL+"/api/v1/runs/0123456789abcdef0123456789abcdef/outcomes", `{"name":"x","passed":true}`); code != http.StatusNotFound {
		t.Errorf("post to a run tally lacks: %d %s, want 404", code, b)
	}
	code, _, b = get(t, url[:len(url)-len("/outcomes")]+"/outcomes", "")
	if code != http.StatusOK || json.Unmarshal(b, &outs) != nil || len(outs.Outcomes) != 101 || outs.Total != 101 || outs.NextOffset != 0 {
		t.Errorf("run 10 outcomes after the edge posts: %d, %d of %d outcomes (next %d), want all 101", code, len(outs.Outcomes), outs.Total, outs.NextOffset)
	}
	// Paged (issue #41: a run's outcomes had no cap): 101 in pages of 40
	// are 40 (next 40), 40 (next 80) and 21 (none), each name once.
	seen := map[string]bool{}
	for _, page := range []struct{ offset, n, next int }{{0, 40, 40}, {40, 40, 80}, {80, 21, 0}} {
		var p api.OutcomesReport
		code, _, b = get(t, fmt.Sprintf("%s?limit=40&offset=%d", url, page.offset), "")
		if code != http.StatusOK || json.Unmarshal(b, &p) != nil || len(p.Outcomes) != page.n || p.NextOffset != page.next || p.Total != 101 {
			t.Errorf("page at %d: %d, %d outcomes of %d, next %d; want %d, next %d", page.offset, code, len(p.Outcomes), p.Total, p.NextOffset, page.n, page.next)
		}
		for _, o := range p.Outcomes {
			seen[o.Name+"/"+o.Source] = true
		}
	}
	if len(seen) != 101 {
		t.Errorf("the pages held %d distinct outcomes, want 101", len(seen))
	}
	for _, q := range []string{"limit=0", "limit=10001", "offset=-1", "limit=x"} {
		if code, _, b := get(t, url+"?"+q, ""); code != http.StatusBadRequest {
			t.Errorf("outcomes?%s: %d %s, want 400", q, code, b)
		}
	}
	if code, _, b := get(t, url+"?limit=10000", ""); code != http.StatusOK {
		t.Errorf("outcomes?limit=10000: %d %s, want 200", code, b)
	}
	for _, q := range []string{"k=0", "k=21", "by=model", "budget_multiple=0", "since=bogus"} {
		if code, _, b := get(t, tally.URL+"/api/v1/tasks?"+q, ""); code != http.StatusBadRequest {
			t.Errorf("tasks?%s: %d %s, want 400", q, code, b)
		}
	}
}
