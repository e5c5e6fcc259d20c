package alerts_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/tallyhq/tally/alerts"
)

func TestParseRulesDefaults(t *testing.T) {
	rules, err := alerts.ParseRules([]byte(`
rules:
  - name: ToolRetryRate
    kind: tool_retry_rate
  - name: ToolSlow
    kind: tool_latency_p95
    threshold: 2000
    for: 5m
    severity: page
    labels: {team: agents}
    runbook_url: https://runbooks.example/tool-slow
    overrides:
      - tool: code_sandbox
        threshold: 30000
      - tool: vector_search
        disabled: true
  - name: ModelTTFC
    kind: model_latency_p95
    measure: ttfc
    threshold: 1500
    window: 1d
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(rules) != 3 {
		t.Fatalf("%d rules", len(rules))
	}
	r := rules[0]
	// Documented defaults of tool_retry_rate: 0.10 over 15m, ≥ 20 calls, for 0, warning.
	if r.Threshold != 0.10 || time.Duration(r.Window) != 15*time.Minute || r.MinSamples != 20 ||
		r.For != 0 || r.Severity != "warning" {
		t.Errorf("defaults: %+v", r)
	}
	s := rules[1]
	if s.Threshold != 2000 || time.Duration(s.For) != 5*time.Minute || s.Severity != "page" ||
		s.Labels["team"] != "agents" || len(s.Overrides) != 2 || *s.Overrides[0].Threshold != 30000 {
		t.Errorf("tool latency rule: %+v", s)
	}
	if m := rules[2]; m.Measure != alerts.MeasureTTFC || time.Duration(m.Window) != 24*time.Hour {
		t.Errorf("model rule: %+v", m)
	}
}

func TestParseRulesErrors(t *testing.T) {
	for _, c := range []struct {
		name, yaml string
		want       []string // substrings of the error
	}{
		{"empty file", ``, []string{`no rules`}},
		{"not yaml", "rules: [", []string{"parse:"}},
		{"unknown field", "rules:\n  - name: A\n    kind: tool_retry_rate\n    treshold: 0.2\n",
			[]string{"line 4", "treshold"}},
		{"unknown kind", "rules:\n  - name: A\n    kind: tool_retries\n",
			[]string{`rule 1 "A" (line 2)`, `kind "tool_retries"`, "tool_retry_rate"}},
		{"missing threshold", "rules:\n  - name: A\n    kind: tool_latency_p95\n",
			[]string{"threshold: required", "milliseconds"}},
		{"rate above 1", "rules:\n  - name: A\n    kind: tool_retry_rate\n    threshold: 10\n",
			[]string{"ratio below 1"}},
		{"bad duration", "rules:\n  - name: A\n    kind: tool_retry_rate\n    window: 15 minutes\n",
			[]string{"line 4", `invalid duration "15 minutes"`}},
		{"missing name", "rules:\n  - kind: tool_retry_rate\n", []string{"name: required"}},
		{"bad name", "rules:\n  - name: tool retry\n    kind: tool_retry_rate\n", []string{"letters, digits and underscores"}},
		{"duplicate name", "rules:\n  - name: A\n    kind: tool_retry_rate\n  - name: A\n    kind: tool_error_rate\n",
			[]string{`rule 2 "A" (line 4): name already used by rule 1`}},
		{"reserved label", "rules:\n  - name: A\n    kind: tool_retry_rate\n    labels: {tool: x}\n",
			[]string{`"tool" is set by tally`}},
		{"override of the wrong subject", "rules:\n  - name: A\n    kind: tool_retry_rate\n    overrides:\n      - model: gpt-4o\n        threshold: 0.5\n",
			[]string{"overrides[0]", "no model to match"}},
		{"measure on a tool rule", "rules:\n  - name: A\n    kind: tool_latency_p95\n    threshold: 5\n    measure: ttfc\n",
			[]string{"only model_latency_p95"}},
		{"every error is reported", "rules:\n  - name: A\n    kind: nope\n  - name: B\n    kind: run_cost\n",
			[]string{`rule 1 "A"`, `rule 2 "B"`, "USD"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := alerts.ParseRules([]byte(c.yaml))
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

// The shipped default rule set must load.
func TestDefaultRuleFile(t *testing.T) {
	rules, err := alerts.LoadRules("../deploy/alerts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[alerts.Kind]bool{}
	for _, r := range rules {
		kinds[r.Kind] = true
	}
	// The at-once safety signals are on by default: one is an incident.
	for _, k := range []alerts.Kind{alerts.KindToolRetryRate, alerts.KindToolErrorRate, alerts.KindToolLatencyP95,
		alerts.KindModelLatencyP95, alerts.KindCacheReadZero, alerts.KindRunCost, alerts.KindRepeatLoop,
		"duplicate_side_effect", "unsafe_retry", "ungated_action"} {
		if !kinds[k] {
			t.Errorf("deploy/alerts.yaml has no %s rule", k)
		}
	}
}

// deploy/prometheus-rules.yaml expresses the same alerts: every default rule
// not about single runs has a PromQL alert of the same name.
func TestPrometheusRulesMatchDefaults(t *testing.T) {
	raw, err := os.ReadFile("../deploy/prometheus-rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Groups []struct {
			Rules []struct {
				Alert string `yaml:"alert"`
				Expr  string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	promAlerts := map[string]bool{}
	for _, g := range doc.Groups {
		for _, r := range g.Rules {
			if r.Expr == "" {
				t.Errorf("%s has no expr", r.Alert)
			}
			promAlerts[r.Alert] = true
		}
	}
	rules, err := alerts.LoadRules("../deploy/alerts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rules {
		if r.Kind == alerts.KindRunCost || r.Kind == alerts.KindRepeatLoop {
			continue
		}
		if !promAlerts[r.Name] {
			t.Errorf("deploy/prometheus-rules.yaml has no alert %s", r.Name)
		}
	}
}

// TestFormatThresholdUSD: budgets below a dollar keep three significant
// digits, so a $0.005 budget and a $0.00927 run never both read "$0.01".
func TestFormatThresholdUSD(t *testing.T) {
	for _, c := range []struct {
		v    float64
		want string
	}{
		{0, "$0.00"},
		{1.25, "$1.25"},
		{12.4, "$12.40"},
		{0.5, "$0.50"},
		{0.00927, "$0.00927"},
		{0.005, "$0.005"},
		{0.0001234, "$0.000123"},
		{0.99999, "$1.00"},
	} {
		if got := alerts.FormatThreshold(&alerts.Rule{Kind: alerts.KindRunCost, Threshold: c.v}); got != c.want {
			t.Errorf("FormatThreshold(run_cost %v) = %q, want %q", c.v, got, c.want)
		}
	}
}
