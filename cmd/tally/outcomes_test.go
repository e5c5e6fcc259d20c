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
	tallytest.SendVersionRegression(t, tally.URL, base)
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
	tally := tallytest.Start(t, func(o *tallytest.Config) { o.Reader = query.NewReader(o.Store, query.WithToolEffects(policy)) })
	id, _ := tallytest.SendSafetyRun(t, tally.URL, time.Now().Add(-time.Hour).Truncate(time.Millisecond))
	var out bytes.Buffer
	if err := runCLI(context.Background(), &out, "signals", "--server", tally.URL, "--since", "2h"); err != nil {
		t.Fatalf("signals: %v\n%s", err, out.String())
	}
	// Fields of each line; the tools table: two steps each, the refund's and
	// the search's first attempts timed out (ambiguous).
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		got = append(got, strings.Join(strings.Fields(l), " "))
	}
	want := []string{
		"KIND TOOL SIGNALS RUNS EXAMPLE RUNS REASON",
		"duplicate_side_effect charge_card 1 1 " + id[:8] + " irreversible tool charge_card succeeded twice with step id pay-1: the side effect happened twice",
		"unsafe_retry refund 1 1 " + id[:8] + " non_idempotent tool refund was retried after an ambiguous outcome: the first call may have taken effect",
		"2 signals in 1 runs",
		"",
		"TOOL EFFECT STEPS OK RETRYABLE AMBIGUOUS DENIED ESCALATED ERROR SIGNALS",
		"charge_card irreversible 2 2 0 0 0 0 0 1",
		"refund non_idempotent 2 1 0 1 0 0 0 1",
		"search_docs read 2 1 0 1 0 0 0 0",
		"upsert_profile idempotent 2 2 0 0 0 0 0 0",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("signals:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestCapsCLI: two runs of tallytest.SendAgentRun's (3,300 tokens,
// $0.007465 each, both ok): p50 = p99 = 3,300 tokens, suggested
// 2.5 × 3,300 = 8,250; cost suggested ⌈2.5 × 0.007465 × 10⁴⌉ / 10⁴ =
// $0.0187; the suggestion printed as a --run-cap value.
func TestCapsCLI(t *testing.T) {
	tally := tallytest.Start(t)
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond).UTC()
	for i := range 2 {
		tallytest.SendAgentRun(t, tally.URL, tallytest.AgentRun{Task: "caps_task", Base: base.Add(time.Duration(i) * time.Minute)})
	}
	var out bytes.Buffer
	if err := runCLI(context.Background(), &out, "caps", "--server", tally.URL, "--since", "2h"); err != nil {
		t.Fatalf("caps: %v\n%s", err, out.String())
	}
	var got []string
	for _, l := range strings.Split(out.String(), "\n") {
		got = append(got, strings.Join(strings.Fields(l), " "))
	}
	text := strings.Join(got, "\n")
	for _, want := range []string{"caps_task tokens 3,300 3,300 8,250 0", "caps_task cost $0.00747 $0.00747 $0.0187 0",
		"caps_task 2 of 2 runs successful (status); 0 over a suggested cap; 0 waited for approval",
		"caps_task suggested: --run-cap 'task=caps_task iterations="} {
		if !strings.Contains(text, want) {
			t.Errorf("caps output lacks %q:\n%s", want, text)
		}
	}
}
