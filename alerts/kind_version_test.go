package alerts_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tallyhq/tally/alerts"
	"github.com/tallyhq/tally/internal/tallytest"
	"github.com/tallyhq/tally/internal/testenv"
	"github.com/tallyhq/tally/query"
)

// TestVersionRegressionReachesAlertmanager: runs sent by the real OTel Go
// SDK — agent version 1.0 passing 9 of 10 (by status), then 1.1 passing 3
// of 10. The pass rate drops 60 points (0.9 → 0.3; Fisher p = 2490/125970
// ≈ 0.0198, see api TestCompareVersions), more than the rule's 20: the
// alert fires for the task, naming both versions, and reaches a real
// Alertmanager. A rule on cost per run (every run costs the same) stays
// quiet, and so does one with a 70-point threshold.
func TestVersionRegressionReachesAlertmanager(t *testing.T) {
	var mu sync.Mutex
	var received []amWebhook
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m amWebhook
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
			t.Errorf("webhook body: %v", err)
		}
		mu.Lock()
		received = append(received, m)
		mu.Unlock()
	}))
	defer receiver.Close()
	amURL := testenv.StartAlertmanager(t, testenv.AlertmanagerOptions{WebhookURL: receiver.URL})

	tally := tallytest.Start(t)
	base := time.Now().Add(-time.Hour).Truncate(time.Second).UTC()
	for i := range 20 {
		v, fail := "1.0", i == 0
		if i >= 10 {
			v, fail = "1.1", i >= 13
		}
		tallytest.SendAgentRun(t, tally.URL, tallytest.AgentRun{Task: "cmp_task", AgentVersion: v, Fail: fail,
			Base: base.Add(time.Duration(i) * time.Minute)})
	}
	rules := mustRules(t, `
rules:
  - {name: PassRateRegressed, kind: version_regression, threshold: 0.20, severity: page}
  - {name: CostRegressed, kind: version_regression, measure: cost_per_run, threshold: 0.10}
  - {name: PassRateCollapsed, kind: version_regression, threshold: 0.70}
`)
	ev := startEvaluator(t, alerts.Config{Rules: rules, Source: query.NewReader(tally.Store),
		Targets: []alerts.Target{alerts.NewAlertmanager(amURL, nil)}, ExternalURL: "http://tally.example", Projects: []string{"default"}})
	if err := ev.Evaluate(context.Background()); err != nil {
		t.Fatal(err)
	}
	list := ev.Alerts("default")
	if len(list) != 1 {
		t.Fatalf("alerts %+v, want PassRateRegressed only", list)
	}
	a := list[0]
	if a.Rule != "PassRateRegressed" || a.State != alerts.StateFiring || a.Labels["task"] != "cmp_task" ||
		a.Value < 0.6-1e-9 || a.Value > 0.6+1e-9 {
		t.Fatalf("alert %+v", a)
	}
	sum := a.Annotations["summary"]
	for _, w := range []string{"task cmp_task got worse by 60.0% > 20.0%", "pass_rate 30.0% against 90.0%", "fisher_exact p=0.0198", "(10 runs)"} {
		if !strings.Contains(sum, w) {
			t.Errorf("summary %q lacks %q", sum, w)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		n := 0
		for _, m := range received {
			for _, al := range m.Alerts {
				if al.Labels["alertname"] == "PassRateRegressed" && al.Labels["task"] == "cmp_task" && al.Status == "firing" {
					n++
				}
			}
		}
		mu.Unlock()
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Alertmanager never notified PassRateRegressed")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
