package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tallyhq/tally/internal/tallytest"
)

// TestExplain sends an OpenLLMetry Anthropic call with prompt caching (the
// conformance scenario read from OpenLLMetry's source) to a real tally and
// checks that `tally explain` shows the reading, the arithmetic and the bill.
func TestExplain(t *testing.T) {
	tally := tallytest.Start(t)
	sc := tallytest.SendScenario(t, tally.URL, "openllmetry-py-anthropic-cache")

	run := func(args ...string) (string, error) {
		cmd := newExplainCmd()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SetArgs(append(args, "--server", tally.URL))
		err := cmd.Execute()
		return out.String(), err
	}
	out, err := run(sc.TraceID())
	if err != nil {
		t.Fatalf("tally explain: %v\n%s", err, out)
	}
	// OpenLLMetry's anthropic instrumentation (0.62.1) sends
	// input_tokens = 40 uncached + 8000 cache read + 1000 cache write = 9040;
	// Anthropic bills 40 × $3 + 8000 × $0.30 + 1000 × $3.75 + 200 × $15 per
	// million = $0.00927.
	for _, want := range []string{
		"reading openllmetry-anthropic",
		"input includes cache: 9040 stands",
		"stored: input 9040 (cache read 8000, cache write 1000), output 200",
		"uncached input 40 × $3/M = $0.00012",
		"cache read 8000 × $0.3/M = $0.0024",
		"cache write 1000 × $3.75/M = $0.00375",
		"output (reasoning included) 200 × $15/M = $0.003",
		"total $0.00927",
		"— counted: its own usage of one call",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("tally explain: output lacks %q\n%s", want, out)
		}
	}

	// One span, by id; and errors for a bad and an unknown span id.
	if out, err := run(sc.TraceID(), sc.SpanID("llm")); err != nil || !strings.Contains(out, "1 spans with usage or cost") {
		t.Errorf("tally explain <trace> <span>: %v\n%s", err, out)
	}
	if _, err := run(sc.TraceID(), "zz"); err == nil || !strings.Contains(err.Error(), "want 16 hex characters") {
		t.Errorf("bad span id: err %v", err)
	}
	if _, err := run(sc.TraceID(), "0123456789abcdef"); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("unknown span id: err %v", err)
	}
}
