package alerts

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/tallyhq/tally/query"
	"github.com/tallyhq/tally/safety"
)

// The safety signals' alert kinds are named after the signal kinds
// (package safety, GET /signals). duplicate_side_effect, unsafe_retry and
// ungated_action fire on one signal (threshold 1, inclusive): each is an
// incident. unknown_tool, invalid_arguments, retry_storm and runaway_loop
// are rates per tool — signals over the tool's steps in the reviewed runs;
// budget_exceeded a rate per task — runs over a cap over the task's runs.

// signalKinds are the alert kinds of the safety signals, in the docs'
// order.
func signalKinds() []kindSpec {
	var out []kindSpec
	for _, k := range safety.Kinds() {
		out = append(out, signalKind(k))
	}
	return out
}

// signalDescriptions are the kinds' default descriptions.
var signalDescriptions = map[safety.SignalKind]string{
	safety.KindDuplicateSideEffect: "A non-idempotent or irreversible tool succeeded twice for the same step: the side effect happened twice.",
	safety.KindUnsafeRetry:         "A non-idempotent or irreversible step was retried after an ambiguous outcome (timeout, 5xx): it may have taken effect twice.",
	safety.KindUnknownTool:         "Agents call tools they were not offered or that are not in the registry: hallucinated tools.",
	safety.KindInvalidArguments:    "Agents call tools with arguments their schemas reject (unknown fields included).",
	safety.KindUngatedAction:       "An irreversible tool ran with no approval before it.",
	safety.KindRetryStorm:          "Tools are retried without backoff, or by parallel branches in lockstep.",
	safety.KindRunawayLoop:         "Runs repeat the same failing call, or make more tool calls than the step limit.",
	safety.KindBudgetExceeded:      "Runs go over their caps on iterations, tokens, active time or spend, or end with partial results.",
}

// signalKind is the alert kind of one signal kind.
func signalKind(kind safety.SignalKind) kindSpec {
	spec := kindSpec{kind: Kind(string(kind)), description: signalDescriptions[kind], window: time.Hour}
	perTask := kind == safety.KindBudgetExceeded
	switch {
	case safety.AtOnce(kind):
		spec.unit, spec.subjects, spec.threshold, spec.minSamples, spec.inclusive, spec.format = "signals", []string{"tool"}, 1, 1, true, formatPlain
	case perTask:
		spec.unit, spec.subjects, spec.threshold, spec.minSamples, spec.ratio, spec.format = "a ratio of runs, 0.05 = 5%", []string{"task"}, 0.05, 20, true, formatPercent
	default:
		spec.unit, spec.subjects, spec.threshold, spec.minSamples, spec.ratio, spec.format = "a ratio of steps, 0.05 = 5%", []string{"tool"}, 0.05, 20, true, formatPercent
	}
	spec.measure = func(ctx context.Context, _ *Evaluator, c *cycle, r *Rule, project string, window time.Duration) ([]sample, error) {
		rep, err := c.signals(ctx, project, window)
		if err != nil {
			return nil, err
		}
		since := c.now.Add(-window).UTC().Format(time.RFC3339)
		win := formatWindow(window)
		var out []sample
		switch {
		case safety.AtOnce(kind):
			for _, g := range rep.Groups {
				if g.Kind != kind {
					continue
				}
				out = append(out, sample{subject: map[string]string{"tool": g.Tool}, value: float64(g.Signals), samples: g.Signals,
					examples: g.ExampleRuns, cond: atLeast,
					detail:    fmt.Sprintf("%d in %d runs in %s; the newest: %s", g.Signals, g.Runs, win, g.Reason),
					runsQuery: url.Values{"since": {since}, "tool": {g.Tool}}})
			}
		case perTask:
			for task, runs := range rep.FlaggedByTask[kind] {
				n := rep.RunsByTask[task]
				out = append(out, sample{subject: map[string]string{"task": task}, value: float64(runs) / float64(max(n, 1)), samples: n,
					examples: rep.FlaggedRunsByTask[kind][task], cond: above,
					detail:    fmt.Sprintf("%d of %d runs in %s", runs, n, win),
					runsQuery: url.Values{"since": {since}, "task": {task}}})
			}
		default:
			steps := map[string]int{}
			for _, t := range rep.Tools {
				steps[t.Tool] = t.Steps
			}
			for _, g := range rep.Groups {
				if g.Kind != kind {
					continue
				}
				n := steps[g.Tool]
				out = append(out, sample{subject: map[string]string{"tool": g.Tool}, value: float64(g.Signals) / float64(max(n, 1)), samples: n,
					examples: g.ExampleRuns, cond: above,
					detail:    fmt.Sprintf("%d signals over %s steps in %s; the newest: %s", g.Signals, strconv.Itoa(n), win, g.Reason),
					runsQuery: url.Values{"since": {since}, "tool": {g.Tool}}})
			}
		}
		return out, nil
	}
	spec.summary = func(_ *Rule, s sample, v, op, t string) string {
		subject := "tool " + s.subject["tool"]
		if perTask {
			subject = "task " + s.subject["task"]
		}
		return fmt.Sprintf("%s on %s: %s %s %s (%s)", kind, subject, v, op, t, s.detail)
	}
	return spec
}

// signals reads a project's signals over a window (by tool) once per
// evaluation.
func (c *cycle) signals(ctx context.Context, project string, d time.Duration) (*query.SignalsReport, error) {
	key := project + "\x00" + d.String()
	if s, ok := c.signalReps[key]; ok {
		return s, nil
	}
	w := c.window(project, d)
	release, err := enter(ctx, c.gate, "alerts")
	if err != nil {
		return nil, err
	}
	rep, err := c.src.Signals(ctx, query.SignalFilter{Project: project, Since: w.Since, Until: w.Until, By: "tool"})
	release()
	if err != nil {
		return nil, err
	}
	if c.signalReps == nil {
		c.signalReps = map[string]*query.SignalsReport{}
	}
	c.signalReps[key] = rep
	return rep, nil
}
