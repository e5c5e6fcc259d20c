package alerts

import (
	"context"
	"fmt"
	"net/url"
	"time"

	"github.com/tallyhq/tally/query"
)

// Tool kinds: per tool, over its calls in the window.
const (
	// KindToolRetryRate: retried calls / all calls per tool (a ratio, 0.10 = 10%).
	KindToolRetryRate Kind = "tool_retry_rate"
	// KindToolErrorRate: failed calls / all calls per tool (a ratio).
	KindToolErrorRate Kind = "tool_error_rate"
	// KindToolLatencyP95: p95 duration of a tool's calls, milliseconds.
	KindToolLatencyP95 Kind = "tool_latency_p95"
)

// toolKind is a kind measured from the window's tool statistics: pick
// takes a tool's value, example runs and the detail text.
func toolKind(pick func(s query.ToolStats, win string) (value float64, examples []string, detail string)) func(context.Context, *Evaluator, *cycle, *Rule, string, time.Duration) ([]sample, error) {
	return func(ctx context.Context, _ *Evaluator, c *cycle, _ *Rule, project string, window time.Duration) ([]sample, error) {
		stats, err := c.toolStats(ctx, project, window)
		if err != nil {
			return nil, err
		}
		win, since := formatWindow(window), c.now.Add(-window).UTC().Format(time.RFC3339)
		out := make([]sample, 0, len(stats))
		for _, s := range stats {
			sm := sample{subject: map[string]string{"tool": s.Tool}, samples: s.Calls, cond: above,
				runsQuery: url.Values{"tool": {s.Tool}, "since": {since}}}
			sm.value, sm.examples, sm.detail = pick(s, win)
			out = append(out, sm)
		}
		return out, nil
	}
}

func toolRetryRate() kindSpec {
	return kindSpec{
		kind:        KindToolRetryRate,
		description: "The tool's calls are being retried more often than the threshold: the tool or what it calls is failing or timing out. A call counts as a retry per tally's retry definition (attempt ≥ 2, repeated call id or step id, or a call after a failed sibling call).",
		unit:        "a ratio, 0.10 = 10%", subjects: []string{"tool"},
		threshold: 0.10, window: 15 * time.Minute, minSamples: 20, ratio: true, format: formatPercent,
		measure: toolKind(func(s query.ToolStats, win string) (float64, []string, string) {
			return s.RetryRate, s.RetriedRuns, fmt.Sprintf("%d of %d calls retried in %s", s.Retries, s.Calls, win)
		}),
		summary: func(_ *Rule, s sample, v, op, t string) string {
			return fmt.Sprintf("tool %s retry rate %s %s %s (%s)", s.subject["tool"], v, op, t, s.detail)
		},
	}
}

func toolErrorRate() kindSpec {
	return kindSpec{
		kind:        KindToolErrorRate,
		description: "The tool's calls end in error more often than the threshold.",
		unit:        "a ratio, 0.10 = 10%", subjects: []string{"tool"},
		threshold: 0.20, window: 15 * time.Minute, minSamples: 20, ratio: true, format: formatPercent,
		measure: toolKind(func(s query.ToolStats, win string) (float64, []string, string) {
			return s.ErrorRate, s.FailedRuns, fmt.Sprintf("%d of %d calls failed in %s", s.Errors, s.Calls, win)
		}),
		summary: func(_ *Rule, s sample, v, op, t string) string {
			return fmt.Sprintf("tool %s error rate %s %s %s (%s)", s.subject["tool"], v, op, t, s.detail)
		},
	}
}

func toolLatencyP95() kindSpec {
	return kindSpec{
		kind:        KindToolLatencyP95,
		description: "The tool's 95th percentile call duration is above the threshold.",
		unit:        "milliseconds", subjects: []string{"tool"},
		window: 15 * time.Minute, minSamples: 20, format: formatMs,
		measure: toolKind(func(s query.ToolStats, win string) (float64, []string, string) {
			return s.P95Ms, s.SlowestRuns, fmt.Sprintf("%d calls in %s", s.Calls, win)
		}),
		summary: func(_ *Rule, s sample, v, op, t string) string {
			return fmt.Sprintf("tool %s p95 latency %s %s %s (%s)", s.subject["tool"], v, op, t, s.detail)
		},
	}
}
