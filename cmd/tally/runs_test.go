package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tallyhq/tally/internal/tallytest"
)

// TestRunByShortID: `tally run` takes the eight characters the UI shows.
// The run is tallytest.SendAgentRun's: 6 spans, task triage_ticket.
func TestRunByShortID(t *testing.T) {
	tally := tallytest.Start(t)
	id := tallytest.SendAgentRun(t, tally.URL, tallytest.AgentRun{Base: time.Now().Add(-time.Hour)})
	var out bytes.Buffer
	if err := runCLI(context.Background(), &out, "run", id[:8], "--server", tally.URL); err != nil {
		t.Fatalf("tally run %s: %v\n%s", id[:8], err, out.String())
	}
	if !strings.Contains(out.String(), "run "+id) || !strings.Contains(out.String(), "task triage_ticket") {
		t.Errorf("tally run %s printed\n%s\nwant run %s, task triage_ticket", id[:8], out.String(), id)
	}
	out.Reset()
	err := runCLI(context.Background(), &out, "run", "1234567", "--server", tally.URL)
	if err == nil || !strings.Contains(err.Error(), "the first 8 or more") {
		t.Errorf("tally run with 7 characters: %v", err)
	}
}

// TestRunsSortedByCost: `tally runs --sort cost` lists the costliest run
// first across pages, over all time by default (as the runs page opens):
// the scenario's spans are dated 2026-06-01. Two SendAgentRun runs cost $0.007465 each; the
// scenario openllmetry-py-anthropic-cache costs $0.00927 (see TestExplain),
// so with one run a page the first page holds it.
func TestRunsSortedByCost(t *testing.T) {
	tally := tallytest.Start(t)
	base := time.Now().Add(-time.Hour)
	tallytest.SendAgentRun(t, tally.URL, tallytest.AgentRun{Base: base})
	tallytest.SendAgentRun(t, tally.URL, tallytest.AgentRun{Base: base.Add(time.Minute)})
	sc := tallytest.SendScenario(t, tally.URL, "openllmetry-py-anthropic-cache")
	var out bytes.Buffer
	if err := runCLI(context.Background(), &out, "runs", "--sort", "cost", "--limit", "1", "--server", tally.URL); err != nil {
		t.Fatalf("tally runs --sort cost: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), sc.TraceID()) {
		t.Errorf("tally runs --sort cost --limit 1 printed\n%s\nwant run %s ($0.00927) first", out.String(), sc.TraceID())
	}
	if err := runCLI(context.Background(), &out, "runs", "--sort", "name", "--server", tally.URL); err == nil || !strings.Contains(err.Error(), "sort") {
		t.Errorf("tally runs --sort name: %v, want a 400 naming sort", err)
	}
}

// TestFmtUSD: the CLI writes money as the UI's usd() does (ui/static/app.js).
func TestFmtUSD(t *testing.T) {
	for _, c := range []struct {
		v    float64
		want string
	}{
		{0, "$0"},
		{0.0031, "$0.0031"},
		{0.007465, "$0.00747"},
		{0.5, "$0.5"},
		{12.345, "$12.35"},
		{1234.4, "$1,234"},
		{1234567, "$1,234,567"},
		{-0.25, "-$0.25"},
	} {
		if got := fmtUSD(c.v); got != c.want {
			t.Errorf("fmtUSD(%v) = %q, want %q", c.v, got, c.want)
		}
	}
}

// TestFmtDurationAndTokens: durations and token counts read as the UI's
// fmtMs and num write them (ui TestNumberFormats has the same tables).
func TestFmtDurationAndTokens(t *testing.T) {
	for _, c := range []struct {
		ms   float64
		want string
	}{
		{0, "0"}, {0.42, "0.42 ms"}, {8.46, "8.5 ms"}, {87.4, "87 ms"}, {999.4, "999 ms"}, {1234, "1.23 s"},
		{12345, "12.3 s"}, {185000, "3 min 05 s"}, {3725000, "1 h 02 min"},
	} {
		if got := fmtDuration(c.ms); got != c.want {
			t.Errorf("fmtDuration(%v) = %q, want %q", c.ms, got, c.want)
		}
	}
	for _, c := range []struct {
		n    uint64
		want string
	}{
		{0, "0"}, {950, "950"}, {12345, "12,345"}, {4100000, "4,100,000"},
	} {
		if got := fmtTokens(c.n); got != c.want {
			t.Errorf("fmtTokens(%d) = %q, want %q", c.n, got, c.want)
		}
	}
}
