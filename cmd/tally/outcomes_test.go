package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tallyhq/tally/internal/tallytest"
)

// TestOutcomesAndTasksCLI: four runs of one task (the real OTel Go SDK),
// three recorded passed and one failed with tally outcome; tally tasks
// then shows, by hand: pass rate 3/4 = 75.0%, pass@2 = 1 − C(1,2)/C(4,2)
// = 100.0%, pass^2 = C(3,2)/C(4,2) = 3/6 = 50.0%, 4 steps a run, 3,300
// tokens, $0.00747 a run and 4 × 0.007465 / 3 = $0.00995 a success.
func TestOutcomesAndTasksCLI(t *testing.T) {
	tally := tallytest.Start(t)
	ctx := context.Background()
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond).UTC()
	for i := range 4 {
		id := tallytest.SendAgentRun(t, tally.URL, tallytest.AgentRun{Base: base.Add(time.Duration(i) * time.Minute)})
		verdict := "--passed"
		if i == 3 {
			verdict = "--failed"
		}
		var out bytes.Buffer
		if err := runCLI(ctx, &out, "outcome", id[:8], "--server", tally.URL, "--name", "resolved", verdict); err != nil {
			t.Fatalf("outcome: %v\n%s", err, out.String())
		}
		want := "recorded resolved for run " + id + ": passed"
		if i == 3 {
			want = "recorded resolved for run " + id + ": failed"
		}
		if !strings.Contains(out.String(), want) {
			t.Errorf("outcome printed %q, want %q", out.String(), want)
		}
	}
	var out bytes.Buffer
	if err := runCLI(ctx, &out, "outcome", "0123456789abcdef0123456789abcdef", "--server", tally.URL, "--name", "x", "--passed", "--failed"); err == nil {
		t.Errorf("--passed with --failed: no error")
	}
	out.Reset()
	if err := runCLI(ctx, &out, "tasks", "--server", tally.URL, "--since", "2h", "--k", "2"); err != nil {
		t.Fatalf("tasks: %v\n%s", err, out.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "PASS@2") {
		t.Fatalf("tasks: want a header and one task\n%s", out.String())
	}
	fields := strings.Fields(lines[1])
	want := []string{"triage_ticket", "4", "4", "75.0%", "100.0%", "50.0%", "4/4", "3,300", "(0.00)", "$0.00747", "$0.00995", "outcomes"}
	if strings.Join(fields, " ") != strings.Join(want, " ") {
		t.Errorf("tasks row\n got %q\nwant %q", fields, want)
	}
}
