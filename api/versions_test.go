package api_test

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tallyhq/tally/api"
	"github.com/tallyhq/tally/internal/tallytest"
	"github.com/tallyhq/tally/query"
)

// TestVersionFingerprints: runs sent by the real OTel Go SDK differ from a
// base configuration in one thing each. The base, the base in another
// conversation and the base with its tool definitions' keys reordered
// (the same schema) share one version; a new agent version, prompt
// version, tool schema, system instructions or request model each start
// their own: 6 versions, the base's with 3 runs.
func TestVersionFingerprints(t *testing.T) {
	tally := tallytest.Start(t)
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond).UTC()
	tools := `[{"type":"function","name":"web_search","parameters":{"type":"object","properties":{"q":{"type":"string"}}}}]`
	reordered := `[{"parameters":{"properties":{"q":{"type":"string"}},"type":"object"},"name":"web_search","type":"function"}]`
	changed := `[{"type":"function","name":"web_search","parameters":{"type":"object","properties":{"q":{"type":"string"},"limit":{"type":"integer"}}}}]`
	cfg := func(mod func(*tallytest.AgentRun)) tallytest.AgentRun {
		r := tallytest.AgentRun{Task: "fp_task", AgentVersion: "1.0", PromptName: "triage", PromptVersion: "3",
			ToolDefinitions: tools, Instructions: `[{"type":"text","content":"You triage tickets."}]`}
		if mod != nil {
			mod(&r)
		}
		return r
	}
	variants := []struct {
		name string
		run  tallytest.AgentRun
	}{
		{"base", cfg(nil)},
		{"other conversation", cfg(func(r *tallytest.AgentRun) { r.Conversation = "other" })},
		{"reordered tool keys", cfg(func(r *tallytest.AgentRun) { r.ToolDefinitions = reordered })},
		{"agent version", cfg(func(r *tallytest.AgentRun) { r.AgentVersion = "1.1" })},
		{"prompt version", cfg(func(r *tallytest.AgentRun) { r.PromptVersion = "4" })},
		{"tool schema", cfg(func(r *tallytest.AgentRun) { r.ToolDefinitions = changed })},
		{"instructions", cfg(func(r *tallytest.AgentRun) {
			r.Instructions = `[{"type":"text","content":"You triage tickets politely."}]`
		})},
		{"model", cfg(func(r *tallytest.AgentRun) { r.ClaudeModel = "claude-haiku-4-5" })},
	}
	for i, v := range variants {
		v.run.Base = base.Add(time.Duration(i) * 10 * time.Second)
		tallytest.SendAgentRun(t, tally.URL, v.run)
	}
	code, _, b := get(t, tally.URL+"/api/v1/versions?task=fp_task&since=2h", "")
	var rep api.VersionsReport
	if code != http.StatusOK || json.Unmarshal(b, &rep) != nil || len(rep.Tasks) != 1 {
		t.Fatalf("versions: %d %s", code, b)
	}
	vs := rep.Tasks[0].Versions
	if len(vs) != 6 {
		t.Fatalf("%d versions, want 6:\n%s", len(vs), b)
	}
	var runs []int
	byAgent := map[string]query.VersionStats{}
	for _, v := range vs {
		runs = append(runs, v.Runs)
		byAgent[strings.Join(v.Config.AgentVersions, ",")+"|"+strings.Join(v.Config.Prompts, ",")+"|"+strings.Join(v.Config.Models, ",")] = v
	}
	slices.Sort(runs)
	if !slices.Equal(runs, []int{1, 1, 1, 1, 1, 3}) {
		t.Errorf("runs per version %v, want the base's 3 and five of 1", runs)
	}
	if _, ok := byAgent["planner@1.1|triage@3|claude-sonnet-4-5→claude-sonnet-4-5-20250929,gpt-4o→gpt-4o"]; !ok {
		t.Errorf("no version with agent 1.1: %v", byAgent)
	}
	if _, ok := byAgent["planner@1.0|triage@4|claude-sonnet-4-5→claude-sonnet-4-5-20250929,gpt-4o→gpt-4o"]; !ok {
		t.Errorf("no version with prompt 4: %v", byAgent)
	}
	if _, ok := byAgent["planner@1.0|triage@3|claude-haiku-4-5→claude-sonnet-4-5-20250929,gpt-4o→gpt-4o"]; !ok {
		t.Errorf("no version with the haiku request: %v", byAgent)
	}
	for _, v := range vs {
		if len(v.Config.Tools) != 1 || len(v.Config.Instructions) != 1 || len(v.Fingerprint) != 12 {
			t.Errorf("version %s: tools %v instructions %v", v.Fingerprint, v.Config.Tools, v.Config.Instructions)
		}
	}
}

// TestCompareVersions: version 1.0 of a task passes 9 of 10 runs, 1.1 (sent
// after it) 3 of 10. By hand: pass rate 0.9 → 0.3, Fisher's exact test on
// [[9, 1], [3, 7]]: with margins 10, 12 of 20 the tables as likely or less
// are k = 2, 3, 9, 10 of C(10,k)·C(10,12−k) = 45, 1200, 1200, 45 out of
// C(20,12) = 125,970: p = 2490/125970 = 0.01977 — beyond noise. The
// compare by time ranges (the first 10 minutes against the next) gives the
// same figures. Every run costs $0.007465, so cost per run does not move
// (Mann–Whitney p 1).
func TestCompareVersions(t *testing.T) {
	tally := tallytest.Start(t)
	base := time.Now().Add(-time.Hour).Truncate(time.Second).UTC()
	tallytest.SendVersionRegression(t, tally.URL, base)
	var vr api.VersionsReport
	code, _, b := get(t, tally.URL+"/api/v1/versions?task=cmp_task&since=2h", "")
	if code != http.StatusOK || json.Unmarshal(b, &vr) != nil || len(vr.Tasks) != 1 || len(vr.Tasks[0].Versions) != 2 {
		t.Fatalf("versions: %d %s", code, b)
	}
	newer, older := vr.Tasks[0].Versions[0], vr.Tasks[0].Versions[1] // newest first seen first
	if newer.Config.AgentVersions[0] != "planner@1.1" || older.Runs != 10 || newer.Passed != 3 || !older.FirstSeen.Equal(base) {
		t.Fatalf("versions: %+v / %+v", newer, older)
	}
	want := 2490.0 / 125970
	check := func(what, q string) {
		t.Helper()
		code, _, b := get(t, tally.URL+"/api/v1/compare?task=cmp_task&since=2h&"+q, "")
		var c query.Comparison
		if code != http.StatusOK || json.Unmarshal(b, &c) != nil {
			t.Fatalf("%s: %d %s", what, code, b)
		}
		pr := c.Metric(query.MetricPassRate)
		if c.A.Runs != 10 || c.B.Runs != 10 || pr == nil || math.Abs(*pr.A-0.9) > 1e-12 || math.Abs(*pr.B-0.3) > 1e-12 ||
			math.Abs(*pr.Diff+0.6) > 1e-12 || pr.PValue == nil || math.Abs(*pr.PValue-want) > 1e-9 || !pr.Significant || !pr.Worse || pr.Test != "fisher_exact" {
			t.Errorf("%s: pass rate %+v (p %v, want %v)", what, pr, pr.PValue, want)
		}
		if cr := c.Metric(query.MetricCostPerRun); cr == nil || *cr.PValue != 1 || cr.Significant || math.Abs(*cr.A-0.007465) > 1e-12 {
			t.Errorf("%s: cost per run %+v", what, cr)
		}
		if er := c.Metric(query.MetricErrorRate); er == nil || math.Abs(*er.A-0.1) > 1e-12 || math.Abs(*er.B-0.7) > 1e-12 || !er.Worse {
			t.Errorf("%s: error rate %+v", what, er)
		}
	}
	check("by version", "a="+older.Fingerprint+"&b="+newer.Fingerprint)
	mid := base.Add(10 * time.Minute).Add(-time.Second)
	check("by range", fmt.Sprintf("a=%s..%s&b=%s..%s", base.Format(time.RFC3339), mid.Format(time.RFC3339),
		mid.Add(time.Second).Format(time.RFC3339), base.Add(time.Hour).Format(time.RFC3339)))
	for _, q := range []string{"a=zz&b=" + newer.Fingerprint, "b=" + newer.Fingerprint, "a=bogus..x&b=" + newer.Fingerprint} {
		if code, _, b := get(t, tally.URL+"/api/v1/compare?task=cmp_task&"+q, ""); code != http.StatusBadRequest {
			t.Errorf("compare?%s: %d %s, want 400", q, code, b)
		}
	}
	if code, _, _ := get(t, tally.URL+"/api/v1/compare?task=cmp_task&a=000000000000&b="+newer.Fingerprint, ""); code != http.StatusNotFound {
		t.Errorf("compare with an unknown version: %d, want 404", code)
	}
	if code, _, _ := get(t, tally.URL+"/api/v1/compare?a="+older.Fingerprint+"&b="+newer.Fingerprint, ""); code != http.StatusBadRequest {
		t.Errorf("compare without a task: %d, want 400", code)
	}
}

// TestTasksByCase: six trials of two dataset cases (Langfuse's
// langfuse.experiment.item.id), graded by status: item-1 passes 2 of 3,
// item-2 3 of 3; a run without a case is left out. By hand: item-1 pass
// rate 2/3, pass^2 = C(2,2)/C(3,2) = 1/3, pass@2 = 1 − C(1,2)/C(3,2) = 1;
// item-2 pass^3 = 1.
func TestTasksByCase(t *testing.T) {
	tally := tallytest.Start(t)
	base := time.Now().Add(-time.Hour).Truncate(time.Second).UTC()
	for i, c := range []struct {
		item string
		fail bool
	}{{"item-1", false}, {"item-1", true}, {"item-1", false}, {"item-2", false}, {"item-2", false}, {"item-2", false}, {"", true}} {
		tallytest.SendAgentRun(t, tally.URL, tallytest.AgentRun{Task: "eval_task", Case: c.item, Fail: c.fail,
			Base: base.Add(time.Duration(i) * time.Minute)})
	}
	code, _, b := get(t, tally.URL+"/api/v1/tasks?since=2h&by=case", "")
	var rep query.TasksReport
	if code != http.StatusOK || json.Unmarshal(b, &rep) != nil || len(rep.Tasks) != 2 {
		t.Fatalf("tasks by case: %d %s", code, b)
	}
	got := map[string]query.TaskReport{}
	for _, tr := range rep.Tasks {
		got[tr.Key] = tr
	}
	one, two := got["item-1"], got["item-2"]
	if one.Runs != 3 || one.Passed != 2 || math.Abs(*one.PassRate-2.0/3) > 1e-12 || math.Abs(one.PassHatK["2"]-1.0/3) > 1e-12 ||
		math.Abs(one.PassAtK["2"]-1) > 1e-12 {
		t.Errorf("item-1: %+v", one)
	}
	if two.Runs != 3 || two.Passed != 3 || math.Abs(two.PassHatK["3"]-1) > 1e-12 {
		t.Errorf("item-2: %+v", two)
	}
}
