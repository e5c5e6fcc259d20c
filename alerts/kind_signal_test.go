package alerts_test

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"

	"github.com/tallyhq/tally/alerts"
	"github.com/tallyhq/tally/internal/tallytest"
	"github.com/tallyhq/tally/internal/testenv"
	"github.com/tallyhq/tally/query"
	"github.com/tallyhq/tally/safety"
	"github.com/tallyhq/tally/support/loadgate"
)

// TestSignalAlertsReachAlertmanager: tallytest.SendSafetyRun's run (a
// charge twice, a refund retried after a timeout) and a run wiring money
// with no approval and a tool the model was not offered, under the
// default rules' at-once kinds and an unknown_tool rate rule: four alerts
// fire on the first evaluation, each naming its tool and the newest
// reason, and reach a real Alertmanager; the retry_storm rule stays quiet.
func TestSignalAlertsReachAlertmanager(t *testing.T) {
	hookURL, received := amReceiver(t)
	amURL := testenv.StartAlertmanager(t, testenv.AlertmanagerOptions{WebhookURL: hookURL})

	policy, err := safety.ParsePolicy(append([]string{"wire_*=irreversible"}, tallytest.SafetyPolicy...))
	if err != nil {
		t.Fatal(err)
	}
	tally := tallytest.Start(t)
	base := time.Now().Add(-10 * time.Minute).Truncate(time.Millisecond)
	tallytest.SendSafetyRun(t, tally.URL, base)
	tallytest.SendSpans(t, tally.URL, "bank", base.Add(time.Minute), []tallytest.Span{
		{Key: "root", Name: "invoke_agent teller", End: 500, Attrs: []attribute.KeyValue{attribute.String("gen_ai.operation.name", "invoke_agent"),
			attribute.String("gen_ai.agent.name", "teller")}},
		tallytest.Chat("chat", "root", "gpt-4o-mini", 10, 100, `[{"name":"lookup_account"}]`, 50, 10),
		tallytest.Tool("wire", "root", "wire_transfer", 120, 150),
	})
	rules := mustRules(t, `
rules:
  - {name: DuplicateSideEffect, kind: duplicate_side_effect, severity: page}
  - {name: UnsafeRetry, kind: unsafe_retry, severity: page}
  - {name: UngatedAction, kind: ungated_action, severity: page}
  - {name: HallucinatedTools, kind: unknown_tool, min_samples: 1}
  - {name: RetryStorm, kind: retry_storm, min_samples: 1}
`)
	for _, r := range rules[:3] {
		if r.Threshold != 1 || r.MinSamples != 1 || time.Duration(r.Window) != time.Hour {
			t.Errorf("%s defaults: threshold %v, min_samples %d, window %s; want 1, 1, 1h", r.Name, r.Threshold, r.MinSamples, time.Duration(r.Window))
		}
	}
	// The reviews of the window's runs take turns at the background load
	// gate, both the rules' and the metrics'.
	gate, gateReg := loadgate.New(1), prometheus.NewRegistry()
	if err := gate.Register(gateReg); err != nil {
		t.Fatal(err)
	}
	ev := startEvaluator(t, alerts.Config{Rules: rules, Source: query.NewReader(tally.Store, query.WithToolEffects(policy)),
		Targets: []alerts.Target{alerts.NewAlertmanager(amURL, nil)}, ExternalURL: "http://tally.example", Projects: []string{"default"}, Gate: gate})
	if err := ev.Evaluate(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := map[string]struct{ tool, summary string }{
		"DuplicateSideEffect": {"charge_card", "duplicate_side_effect on tool charge_card: 1 ≥ 1 (1 in 1 runs in 1h; the newest: irreversible tool charge_card succeeded twice with step id pay-1: the side effect happened twice)"},
		"UnsafeRetry":         {"refund", "unsafe_retry on tool refund: 1 ≥ 1 (1 in 1 runs in 1h; the newest: non_idempotent tool refund was retried after an ambiguous outcome: the first call may have taken effect)"},
		"UngatedAction":       {"wire_transfer", "ungated_action on tool wire_transfer: 1 ≥ 1 (1 in 1 runs in 1h; the newest: irreversible tool wire_transfer ran with no approval before it)"},
		"HallucinatedTools":   {"wire_transfer", "unknown_tool on tool wire_transfer: 100.0% > 5.0% (1 signals over 1 steps in 1h; the newest: tool wire_transfer was called but the model was offered only lookup_account)"},
	}
	list := ev.Alerts("default")
	if len(list) != len(want) {
		t.Errorf("%d alerts, want %d: %+v", len(list), len(want), list)
	}
	for _, a := range list {
		w, ok := want[a.Rule]
		if !ok || a.State != alerts.StateFiring || a.Labels["tool"] != w.tool || a.Annotations["summary"] != w.summary {
			t.Errorf("%s: state %s tool %q summary %q; want firing %q %q", a.Rule, a.State, a.Labels["tool"], a.Annotations["summary"], w.tool, w.summary)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := map[string]bool{}
		for _, m := range received() {
			for _, al := range m.Alerts {
				if al.Status == "firing" && al.Labels["tool"] == want[al.Labels["alertname"]].tool {
					got[al.Labels["alertname"]] = true
				}
			}
		}
		if len(got) == len(want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Alertmanager notified %v, want all of %v", got, want)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// The counters: one signal each on /metrics, and not again on the
	// next refresh.
	reg := prometheus.NewRegistry()
	x, err := alerts.NewExporter(alerts.ExporterConfig{Source: query.NewReader(tally.Store, query.WithToolEffects(policy)), Registerer: reg, Gate: gate})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := x.Refresh(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	g := scrape(t, gateReg)
	for _, job := range []string{"alerts", "metrics"} {
		if got := metricValue(t, g, "tally_background_loads", map[string]string{"job": job}); got != 0 {
			t.Errorf("tally_background_loads{job=%s} = %v after the reads, want 0 (the turn given back)", job, got)
		}
	}
	f := scrape(t, reg)
	for _, c := range []struct{ kind, tool string }{{"duplicate_side_effect", "charge_card"}, {"unsafe_retry", "refund"},
		{"ungated_action", "wire_transfer"}, {"unknown_tool", "wire_transfer"}} {
		if got := metricValue(t, f, "tally_signals_total", map[string]string{"project": "default", "kind": c.kind, "tool": c.tool}); got != 1 {
			t.Errorf("tally_signals_total{%s, %s} = %v, want 1", c.kind, c.tool, got)
		}
	}
}

// TestSpendBudgetForecast: tallytest.SendAgentRun's run ($0.007465, by the
// price catalog) at 11:00 UTC, evaluated at 12:00: half the day has gone,
// so the day is forecast at 2 × $0.007465 = $0.01493, over a $0.01 budget
// though only $0.007465 is spent; at that rate the spend passes $0.01
// after 12 h × 0.01 / 0.007465 = 16.075 h, at 16:04 UTC. A $0.02 budget
// by agent stays quiet (TestForecast covers a month's first tenth).
func TestSpendBudgetForecast(t *testing.T) {
	tally := tallytest.Start(t)
	now := time.Now().UTC()
	at := time.Date(now.Year(), now.Month(), now.Day(), 12, 0, 0, 0, time.UTC)
	if at.After(now.Add(-time.Minute)) {
		at = at.AddDate(0, 0, -1)
	}
	tallytest.SendAgentRun(t, tally.URL, tallytest.AgentRun{Task: "spend", Base: at.Add(-time.Hour)})
	rules := mustRules(t, `
rules:
  - {name: DailySpend, kind: spend_budget, period: day, threshold: 0.01}
  - {name: AgentSpend, kind: spend_budget, period: day, by: agent, threshold: 0.02}
`)
	ev := startEvaluator(t, alerts.Config{Rules: rules, Source: query.NewReader(tally.Store), Projects: []string{"default"},
		Now: func() time.Time { return at }})
	if err := ev.Evaluate(context.Background()); err != nil {
		t.Fatal(err)
	}
	list := ev.Alerts("default")
	if len(list) != 1 || list[0].Rule != "DailySpend" || list[0].State != alerts.StateFiring || math.Abs(list[0].Value-2*0.007465) > 1e-9 {
		t.Fatalf("alerts %+v, want DailySpend firing at 0.01493", list)
	}
	if s := list[0].Annotations["summary"]; !strings.Contains(s, "the project's day spend is forecast at $0.0149 > budget $0.01") ||
		!strings.Contains(s, "at this rate it passes $0.01 by 16:04 UTC") {
		t.Errorf("summary %q", s)
	}
	if _, err := alerts.ParseRules([]byte("rules:\n  - {name: X, kind: spend_budget, period: week, threshold: 1}\n")); err == nil {
		t.Error("period week accepted")
	}
	if _, err := alerts.ParseRules([]byte("rules:\n  - {name: X, kind: run_cost, period: day, threshold: 1}\n")); err == nil {
		t.Error("period on run_cost accepted")
	}
}

// TestForecast: the linear forecast, its pass time, and no forecast in
// the period's first tenth.
func TestForecast(t *testing.T) {
	start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	end := start.AddDate(0, 1, 0) // 31 days
	// $100 in the first 10 days: $10 a day, $310 for the month; $250 is passed after 25 days.
	f, passes := alerts.Forecast(100, 250, start, end, start.AddDate(0, 0, 10))
	if math.Abs(f-310) > 1e-9 || !passes.Equal(start.AddDate(0, 0, 25)) {
		t.Errorf("forecast %v passes %v, want 310 on Dec 26", f, passes)
	}
	// Three days in (under 3.1): the spend so far.
	if f, passes := alerts.Forecast(100, 250, start, end, start.AddDate(0, 0, 3)); f != 100 || !passes.IsZero() {
		t.Errorf("early forecast %v %v, want 100 and none", f, passes)
	}
	// Already over: no pass time.
	if _, passes := alerts.Forecast(300, 250, start, end, start.AddDate(0, 0, 10)); !passes.IsZero() {
		t.Errorf("pass time %v for a spent budget", passes)
	}
}
