package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tallyhq/tally/internal/tallytest"
	"github.com/tallyhq/tally/query"
	"github.com/tallyhq/tally/safety"
	"github.com/tallyhq/tally/server"
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

// TestCompareCLI: version 1.0 passes 9 of 10 runs, 1.1 3 of 10 (by
// status). tally versions lists both; tally compare prints the pass rate
// 90.0% → 30.0% (−60.0%), Fisher p = 2490/125970 = 0.0198, WORSE, and
// exits 1 so a CI gate fails; the reverse comparison exits 0.
func TestCompareCLI(t *testing.T) {
	tally := tallytest.Start(t)
	ctx := context.Background()
	base := time.Now().Add(-time.Hour).Truncate(time.Second).UTC()
	for i := range 20 {
		v, fail := "1.0", i == 0
		if i >= 10 {
			v, fail = "1.1", i >= 13
		}
		tallytest.SendAgentRun(t, tally.URL, tallytest.AgentRun{Task: "cmp_task", AgentVersion: v, Fail: fail,
			Base: base.Add(time.Duration(i) * time.Minute)})
	}
	var out bytes.Buffer
	if err := runCLI(ctx, &out, "versions", "--server", tally.URL, "--task", "cmp_task", "--since", "2h"); err != nil {
		t.Fatalf("versions: %v\n%s", err, out.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[1], "planner@1.1") || !strings.Contains(lines[2], "planner@1.0") {
		t.Fatalf("versions: want the header, 1.1 then 1.0\n%s", out.String())
	}
	newer, older := strings.Fields(lines[1])[1], strings.Fields(lines[2])[1]
	out.Reset()
	err := runCLI(ctx, &out, "compare", "--server", tally.URL, "--task", "cmp_task", "--since", "2h", "--a", older, "--b", newer)
	var exit *exitError
	if !errors.As(err, &exit) || exit.code != 1 {
		t.Fatalf("compare: want exit 1, got %v\n%s", err, out.String())
	}
	var row string
	for _, l := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(l, "pass_rate ") {
			row = strings.Join(strings.Fields(l), " ")
		}
	}
	if row != "pass_rate 90.0% 30.0% -60.0% 0.0198 fisher_exact WORSE" {
		t.Errorf("pass rate row %q\n%s", row, out.String())
	}
	out.Reset()
	if err := runCLI(ctx, &out, "compare", "--server", tally.URL, "--task", "cmp_task", "--since", "2h", "--a", newer, "--b", older); err != nil {
		t.Errorf("reverse compare: %v\n%s", err, out.String())
	}
}

// TestSignalsCLI: tally signals lists tallytest.SendSafetyRun's two
// signals under its policy, one row per kind and tool, with the run.
func TestSignalsCLI(t *testing.T) {
	policy, err := safety.ParsePolicy(tallytest.SafetyPolicy)
	if err != nil {
		t.Fatal(err)
	}
	tally := tallytest.Start(t, func(o *server.Options) { o.Reader = query.NewReader(o.Store, query.WithToolEffects(policy)) })
	id, _ := tallytest.SendSafetyRun(t, tally.URL, time.Now().Add(-time.Hour).Truncate(time.Millisecond))
	var out bytes.Buffer
	if err := runCLI(context.Background(), &out, "signals", "--server", tally.URL, "--since", "2h"); err != nil {
		t.Fatalf("signals: %v\n%s", err, out.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[1], "duplicate_side_effect  charge_card  1") || !strings.HasPrefix(lines[2], "unsafe_retry") ||
		!strings.Contains(lines[1], id[:8]) || lines[3] != "2 signals in 1 runs" {
		t.Errorf("signals:\n%s", out.String())
	}
}
