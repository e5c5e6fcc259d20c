package alerts

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/tallyhq/tally/query"
)

// KindVersionRegression: a task's newest version (configuration
// fingerprint: models, agent and service versions, prompts, tool schemas,
// instructions — query.RunConfig) is worse than the version before it on
// the rule's measure, by more than the threshold and beyond noise (the
// comparison's test at p < 0.05), with at least min_samples runs a side
// (graded runs for pass_rate). The threshold is a drop in points for
// pass_rate and a rise in points for error_rate and retry_rate (0.10 = 10
// points); a relative rise for cost_per_run and p95_duration_ms (0.20 =
// 20% more). Both versions are named in the summary.
const KindVersionRegression Kind = "version_regression"

// versionMeasures are the metrics a version_regression rule may watch, the
// first the default.
var versionMeasures = []string{query.MetricPassRate, query.MetricErrorRate, query.MetricRetryRate,
	query.MetricCostPerRun, query.MetricP95Duration}

func versionRegression() kindSpec {
	return kindSpec{
		kind:        KindVersionRegression,
		description: "A new version of the agent (a changed model, prompt, tool schema, instructions or agent version) does worse than the one before it.",
		unit:        "points or relative change", subjects: []string{"task"},
		threshold: 0.10, window: 7 * 24 * time.Hour, minSamples: 10, measures: versionMeasures, format: formatPercent,
		measure: func(ctx context.Context, _ *Evaluator, c *cycle, r *Rule, project string, window time.Duration) ([]sample, error) {
			changes, err := c.src.LatestVersionChanges(ctx, project, c.now.Add(-window), c.now, "")
			if err != nil {
				return nil, err
			}
			return regressions(changes, r, c.now.Add(-window), func(ch *query.Comparison, m *query.MetricDiff) string {
				return fmt.Sprintf("version %s (first seen %s, %d runs) %s %s against %s for version %s (%d runs)",
					ch.B.Fingerprint, ch.B.FirstSeen.UTC().Format(time.DateTime), ch.B.Runs, r.Measure, metricValue(r.Measure, *m.B),
					metricValue(r.Measure, *m.A), ch.A.Fingerprint, ch.A.Runs)
			}), nil
		},
		summary: regressionSummary,
	}
}

// KindPeriodRegression: a task did worse over the last window than over
// the window before it, on the rule's measure — the same thresholds, test
// and samples as version_regression, for agents whose versions are not
// pinned in their spans.
const KindPeriodRegression Kind = "period_regression"

func periodRegression() kindSpec {
	return kindSpec{
		kind:        KindPeriodRegression,
		description: "The agent did worse on a task over the last window than over the window before it.",
		unit:        "points or relative change", subjects: []string{"task"},
		threshold: 0.10, window: 24 * time.Hour, minSamples: 10, measures: versionMeasures, format: formatPercent,
		measure: func(ctx context.Context, _ *Evaluator, c *cycle, r *Rule, project string, window time.Duration) ([]sample, error) {
			changes, err := c.src.LatestPeriodChanges(ctx, project, window, c.now, "")
			if err != nil {
				return nil, err
			}
			win := formatWindow(window)
			return regressions(changes, r, c.now.Add(-2*window), func(ch *query.Comparison, m *query.MetricDiff) string {
				return fmt.Sprintf("the last %s (%d runs) %s %s against %s the %s before (%d runs)",
					win, ch.B.Runs, r.Measure, metricValue(r.Measure, *m.B), metricValue(r.Measure, *m.A), win, ch.A.Runs)
			}), nil
		},
		summary: regressionSummary,
	}
}

// regressions turns comparisons into samples: the value is how much worse
// B is on the rule's measure (points for rates, relative for cost and
// duration), the samples the smaller side (graded runs for pass_rate), and
// the condition also wants the difference beyond noise.
func regressions(changes []query.Comparison, r *Rule, since time.Time, describe func(*query.Comparison, *query.MetricDiff) string) []sample {
	var out []sample
	for i := range changes {
		ch := &changes[i]
		m := ch.Metric(r.Measure)
		if m == nil || m.A == nil || m.B == nil || m.Diff == nil {
			continue
		}
		worse := *m.Diff
		if m.HigherIsBetter {
			worse = -worse
		}
		if r.Measure == query.MetricCostPerRun || r.Measure == query.MetricP95Duration {
			if m.Relative == nil {
				continue
			}
			worse = *m.Relative
		}
		n := min(ch.A.Runs, ch.B.Runs)
		if r.Measure == query.MetricPassRate {
			n = min(ch.A.Graded, ch.B.Graded)
		}
		p := 1.0
		if m.PValue != nil {
			p = *m.PValue
		}
		significant := m.Significant
		out = append(out, sample{
			subject: map[string]string{"task": ch.Task},
			value:   worse, samples: n,
			detail: describe(ch, m) + ", " + m.Test + " p=" + strconv.FormatFloat(p, 'g', 3, 64),
			cond: func(value, threshold float64, samples, minSamples int) bool {
				return significant && above(value, threshold, samples, minSamples)
			},
			runsQuery: url.Values{"task": {ch.Task}, "since": {since.UTC().Format(time.RFC3339)}},
		})
	}
	return out
}

// regressionSummary is the summary of both regression kinds.
func regressionSummary(_ *Rule, s sample, v, op, t string) string {
	if s.value <= 0 {
		return fmt.Sprintf("task %s did not get worse: %s", s.subject["task"], s.detail)
	}
	return fmt.Sprintf("task %s got worse by %s %s %s: %s", s.subject["task"], v, op, t, s.detail)
}

// metricValue writes a comparison metric in its unit.
func metricValue(metric string, v float64) string {
	switch metric {
	case query.MetricCostPerRun:
		return formatUSD(v)
	case query.MetricP95Duration:
		return formatMs(v)
	}
	return formatPercent(v)
}
