package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/tallyhq/tally/internal/conformance"
	"github.com/tallyhq/tally/internal/tallytest"
)

// TestCostConfidenceInCLI sends a call of OpenTelemetry's openai-v2
// instrumentation, which never reports cached tokens (scenario
// otel-py-openai-v2-openai-chat-cached, $0.00925), and an exactly billed
// OpenLLMetry Anthropic call ($0.00927): `tally runs` rates the first
// upper_bound and the second exact, `tally run` and `tally explain` say
// why and cite the rule, and `tally cost` says 50% of the spend is exact
// (0.00927 / 0.01852).
func TestCostConfidenceInCLI(t *testing.T) {
	tally := tallytest.Start(t)
	bound := tallytest.SendScenario(t, tally.URL, "otel-py-openai-v2-openai-chat-cached")
	exact := tallytest.SendScenario(t, tally.URL, "openllmetry-py-anthropic-cache")
	cli := func(args ...string) string {
		t.Helper()
		var out bytes.Buffer
		if err := runCLI(context.Background(), &out, append(args, "--server", tally.URL)...); err != nil {
			t.Fatalf("tally %s: %v\n%s", strings.Join(args, " "), err, out.String())
		}
		return out.String()
	}
	rows := map[string]string{}
	for _, line := range strings.Split(cli("runs"), "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			rows[f[0]] = line
		}
	}
	if !strings.Contains(rows[bound.TraceID()], " upper_bound ") || !strings.Contains(rows[exact.TraceID()], " exact ") {
		t.Errorf("tally runs: want upper_bound on %s and exact on %s:\n%s\n%s", bound.TraceID(), exact.TraceID(), rows[bound.TraceID()], rows[exact.TraceID()])
	}
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"run", bound.TraceID()}, []string{"cost $0.00925 (upper_bound)", "upper_bound: OpenTelemetry python-contrib opentelemetry-instrumentation-openai-v2", "cached_tokens"}},
		{[]string{"explain", bound.TraceID()}, []string{"confidence: upper_bound: sends prompt_tokens and completion_tokens only", "rule otel-openai-v2-no-cache-read", "source: open-telemetry/opentelemetry-python-contrib"}},
		{[]string{"explain", exact.TraceID()}, []string{"confidence: exact"}},
		{[]string{"cost", "--since", conformance.Start.Add(-3600e9).Format("2006-01-02T15:04:05Z"), "--until", conformance.Start.Add(3600e9).Format("2006-01-02T15:04:05Z")}, []string{"EXACT", "50%"}},
		// Two providers, openai and anthropic: one listed, one on the others' line.
		{[]string{"cost", "--by", "provider", "--limit", "1", "--since", conformance.Start.Add(-3600e9).Format("2006-01-02T15:04:05Z"), "--until", conformance.Start.Add(3600e9).Format("2006-01-02T15:04:05Z")}, []string{"(1 others)"}},
	} {
		out := cli(c.args...)
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("tally %s lacks %q:\n%s", strings.Join(c.args, " "), w, out)
			}
		}
	}
}
