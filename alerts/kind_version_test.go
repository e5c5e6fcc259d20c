package alerts_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tallyhq/tally/alerts"
	"github.com/tallyhq/tally/internal/tallytest"
	"github.com/tallyhq/tally/internal/testenv"
	"github.com/tallyhq/tally/query"
	"github.com/tallyhq/tally/safety"
)

// TestVersionRegressionReachesAlertmanager: runs sent by the real OTel Go
// SDK — agent version 1.0 passing 9 of 10 (by status), then 1.1 passing 3
// of 10. The pass rate drops 60 points (0.9 → 0.3; Fisher p = 2490/125970
// ≈ 0.0198, see api TestCompareVersions), more than the rule's 20: the
// alert fires for the task, naming both versions, and reaches a real
// Alertmanager. The runs are spread so that the first ten fall in the 10
// minutes before the last 10: a period_regression rule over 10 minutes
// fires with the same figures. A rule on cost per run (every run costs the
// same) stays quiet, and so does one with a 70-point threshold.
func TestVersionRegressionReachesAlertmanager(t *testing.T) {
	hookURL, received := amReceiver(t)
	amURL := testenv.StartAlertmanager(t, testenv.AlertmanagerOptions{WebhookURL: hookURL})

	tally := tallytest.Start(t)
	// Runs a minute apart from 19m30s ago: the first ten fall in the 10
	// minutes before the last 10, the next ten in the last 10.
	base := time.Now().Add(-19*time.Minute - 30*time.Second).UTC()
	tallytest.SendVersionRegression(t, tally.URL, base)
	rules := mustRules(t, `
rules:
  - {name: PassRateRegressed, kind: version_regression, threshold: 0.20, severity: page}
  - {name: CostRegressed, kind: version_regression, measure: cost_per_run, threshold: 0.10}
  - {name: PassRateCollapsed, kind: version_regression, threshold: 0.70}
  - {name: PeriodRegressed, kind: period_regression, window: 10m, threshold: 0.20}
`)
	ev := startEvaluator(t, alerts.Config{Rules: rules, Source: query.NewReader(tally.Store),
		Targets: []alerts.Target{alerts.NewAlertmanager(amURL, nil)}, ExternalURL: "http://tally.example", Projects: []string{"default"}})
	if err := ev.Evaluate(context.Background()); err != nil {
		t.Fatal(err)
	}
	list := ev.Alerts("default")
	byRule := map[string]alerts.Status{}
	for _, a := range list {
		byRule[a.Rule] = a
	}
	if len(list) != 2 {
		t.Fatalf("alerts %+v, want PassRateRegressed and PeriodRegressed", list)
	}
	for _, c := range []struct {
		rule string
		want []string
	}{
		{"PassRateRegressed", []string{"task cmp_task got worse by 60.0% > 20.0%", "pass_rate 30.0% against 90.0%", "fisher_exact p=0.0198", "(10 runs)"}},
		{"PeriodRegressed", []string{"task cmp_task got worse by 60.0% > 20.0%: the last 10m (10 runs) pass_rate 30.0% against 90.0% the 10m before (10 runs), fisher_exact p=0.0198"}},
	} {
		a, ok := byRule[c.rule]
		if !ok || a.State != alerts.StateFiring || a.Labels["task"] != "cmp_task" || a.Value < 0.6-1e-9 || a.Value > 0.6+1e-9 {
			t.Fatalf("%s: %+v", c.rule, a)
		}
		for _, w := range c.want {
			if !strings.Contains(a.Annotations["summary"], w) {
				t.Errorf("%s summary %q lacks %q", c.rule, a.Annotations["summary"], w)
			}
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		n := 0
		for _, m := range received() {
			for _, al := range m.Alerts {
				if al.Labels["alertname"] == "PassRateRegressed" && al.Labels["task"] == "cmp_task" && al.Status == "firing" {
					n++
				}
			}
		}
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Alertmanager never notified PassRateRegressed")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestSignalMetrics: tallytest.SendSafetyRun's run five minutes ago, under
// its policy, puts its two signals on /metrics: tally_signals is 1 for
// duplicate_side_effect on charge_card and 1 for unsafe_retry on refund.
func TestSignalMetrics(t *testing.T) {
	policy, err := safety.ParsePolicy(tallytest.SafetyPolicy)
	if err != nil {
		t.Fatal(err)
	}
	tally := tallytest.Start(t)
	tallytest.SendSafetyRun(t, tally.URL, time.Now().Add(-5*time.Minute).Truncate(time.Millisecond))
	reg := prometheus.NewRegistry()
	x, err := alerts.NewExporter(alerts.ExporterConfig{Source: query.NewReader(tally.Store, query.WithToolEffects(policy)), Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	if err := x.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	f := scrape(t, reg)
	for _, c := range []struct{ kind, tool string }{{"duplicate_side_effect", "charge_card"}, {"unsafe_retry", "refund"}} {
		if got := metricValue(t, f, "tally_signals", map[string]string{"project": "default", "kind": c.kind, "tool": c.tool}); got != 1 {
			t.Errorf("tally_signals{%s, %s} = %v, want 1", c.kind, c.tool, got)
		}
	}
}
