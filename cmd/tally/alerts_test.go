package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/tallyhq/tally/alerts"
	"github.com/tallyhq/tally/api"
	"github.com/tallyhq/tally/internal/conformance"
	"github.com/tallyhq/tally/internal/tallytest"
	"github.com/tallyhq/tally/query"
)

// TestAlertsThroughAPI runs `tally alerts check`, `rules` and `list`
// against a real tally whose evaluator reads a real ClickHouse: the CLI
// needs only --server, never the database.
func TestAlertsThroughAPI(t *testing.T) {
	ruleSet := tallytest.BudgetRules(t)
	// The corpus's spans start at conformance.Start; the evaluator's clock
	// stands an hour later so the 2h windows hold them.
	now := func() time.Time { return conformance.Start.Add(time.Hour) }
	var ev *alerts.Evaluator
	tally := tallytest.Start(t, func(o *tallytest.Config) {
		var err error
		ev, err = alerts.NewEvaluator(alerts.Config{Rules: ruleSet, Source: query.NewReader(o.Store), Now: now})
		if err != nil {
			t.Fatal(err)
		}
		o.API.Alerts = ev
	})
	// OpenLLMetry's Anthropic call with caching: $0.00927 (see TestExplain:
	// 40 × $3 + 8000 × $0.30 + 1000 × $3.75 + 200 × $15 per million).
	tallytest.SendScenario(t, tally.URL, "openllmetry-py-anthropic-cache")
	const runCost = 0.00927

	ctx := context.Background()
	var out bytes.Buffer
	err := runCLI(ctx, &out, "alerts", "check", "--server", tally.URL)
	var exit *exitError
	if !errors.As(err, &exit) || exit.code != 1 {
		t.Fatalf("alerts check: want exit 1 (a rule fires), got %v\n%s", err, out.String())
	}
	// budget_low fires: $0.00927 > $0.005. budget_high measures no run over
	// $0.05, so it has no subject to list.
	for _, want := range []string{
		"FIRING  budget_low",
		"a run cost $0.00927 > budget $0.005 (1 runs over budget in 2h)",
		"1 of 1 checks would fire (2 rules)",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("alerts check lacks %q:\n%s", want, out.String())
		}
	}

	out.Reset()
	err = runCLI(ctx, &out, "alerts", "check", "--server", tally.URL, "--json")
	if !errors.As(err, &exit) || exit.code != 1 {
		t.Fatalf("alerts check --json: want exit 1, got %v", err)
	}
	var results []alerts.CheckResult
	if err := json.Unmarshal(out.Bytes(), &results); err != nil {
		t.Fatalf("alerts check --json: %v\n%s", err, out.String())
	}
	if len(results) != 1 || results[0].Rule != "budget_low" || !results[0].Firing || results[0].Samples != 1 ||
		math.Abs(results[0].Value-runCost) > 1e-9 || results[0].Threshold != 0.005 || results[0].Project != "default" {
		t.Errorf("alerts check --json: %+v", results)
	}

	// The server's evaluator has not run yet: nothing listed, rules idle.
	out.Reset()
	if err := runCLI(ctx, &out, "alerts", "list", "--server", tally.URL); err != nil ||
		!strings.Contains(out.String(), "No alerts pending, firing or recently resolved.") {
		t.Errorf("alerts list before evaluation: %v\n%s", err, out.String())
	}
	if err := ev.Evaluate(ctx); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := runCLI(ctx, &out, "alerts", "list", "--server", tally.URL); err != nil {
		t.Fatalf("alerts list: %v\n%s", err, out.String())
	}
	if lines := strings.Split(strings.TrimSpace(out.String()), "\n"); len(lines) != 2 ||
		!strings.HasPrefix(lines[1], "firing  budget_low  page") ||
		!strings.Contains(lines[1], "a run cost $0.00927 > budget $0.005") {
		t.Errorf("alerts list: want a header and budget_low firing, got\n%s", out.String())
	}

	// The history holds the episode under way: fired at the evaluator's
	// now, not resolved. The corpus is dated June 2026, so the range is
	// given; the last 7 days (the default) hold nothing.
	out.Reset()
	if err := runCLI(ctx, &out, "alerts", "history", "--server", tally.URL, "--since", "2026-05-01T00:00:00Z", "--json"); err != nil {
		t.Fatalf("alerts history: %v\n%s", err, out.String())
	}
	var hist api.AlertHistoryReport
	if err := json.Unmarshal(out.Bytes(), &hist); err != nil {
		t.Fatalf("alerts history --json: %v\n%s", err, out.String())
	}
	if len(hist.Episodes) != 1 || hist.Episodes[0].Rule != "budget_low" || !hist.Episodes[0].FiredAt.Equal(now()) ||
		!hist.Episodes[0].ResolvedAt.IsZero() || math.Abs(hist.Episodes[0].FiredValue-runCost) > 1e-9 || hist.Episodes[0].Threshold != 0.005 {
		t.Errorf("alerts history: %+v", hist.Episodes)
	}
	out.Reset()
	if err := runCLI(ctx, &out, "alerts", "history", "--server", tally.URL, "--since", "2026-05-01T00:00:00Z"); err != nil ||
		!strings.Contains(out.String(), "firing") || !strings.Contains(out.String(), "budget_low") ||
		!strings.Contains(out.String(), "a run cost $0.00927 > budget $0.005") {
		t.Errorf("alerts history: %v\n%s", err, out.String())
	}
	out.Reset()
	if err := runCLI(ctx, &out, "alerts", "history", "--server", tally.URL); err != nil || !strings.Contains(out.String(), "No alert fired since") {
		t.Errorf("alerts history of the last 7 days: %v\n%s", err, out.String())
	}

	out.Reset()
	if err := runCLI(ctx, &out, "alerts", "rules", "--server", tally.URL, "--json"); err != nil {
		t.Fatalf("alerts rules: %v", err)
	}
	var rep api.AlertRulesReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("alerts rules --json: %v\n%s", err, out.String())
	}
	if len(rep.Rules) != 2 || rep.Rules[0].Name != "budget_low" || rep.Rules[0].Firing != 1 || rep.Rules[0].Severity != "page" ||
		rep.Rules[0].RunbookURL != "https://runbooks.example/budget" || time.Duration(rep.Rules[0].Window) != 2*time.Hour ||
		rep.Rules[1].Name != "budget_high" || rep.Rules[1].Firing != 0 || rep.Rules[1].Threshold != 0.05 {
		t.Errorf("alerts rules: %s", out.String())
	}
	out.Reset()
	if err := runCLI(ctx, &out, "alerts", "rules", "--server", tally.URL); err != nil {
		t.Fatalf("alerts rules: %v", err)
	}
	if !strings.Contains(out.String(), "budget_low   run_cost  $0.005") ||
		!strings.Contains(out.String(), "https://runbooks.example/budget") {
		t.Errorf("alerts rules table:\n%s", out.String())
	}
}

// TestAlertsCLIErrors: a server without alerting says how to turn it on,
// and a server that is not there gets the "is tally running" hint.
func TestAlertsCLIErrors(t *testing.T) {
	tally := tallytest.Start(t)
	var out bytes.Buffer
	err := runCLI(context.Background(), &out, "alerts", "check", "--server", tally.URL)
	if err == nil || !strings.Contains(err.Error(), "alerting is not configured (tally serve --alerts-rules)") {
		t.Errorf("alerts check without alerting: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close()
	err = runCLI(context.Background(), &out, "alerts", "list", "--server", closed)
	if err == nil || !strings.Contains(err.Error(), "is tally running there?") {
		t.Errorf("alerts list against a closed port: %v", err)
	}
}
