package alerts

import (
	"context"
	"fmt"
	"net/url"
	"time"
)

// KindModelLatencyP95: p95 duration (or, with measure: ttfc, time to first
// chunk) of a model's inference calls, milliseconds.
const KindModelLatencyP95 Kind = "model_latency_p95"

// Measures of model_latency_p95.
const (
	MeasureDuration = "duration"
	MeasureTTFC     = "ttfc"
)

func modelLatencyP95() kindSpec {
	return kindSpec{
		kind:        KindModelLatencyP95,
		description: "The model's 95th percentile inference latency is above the threshold.",
		unit:        "milliseconds", subjects: []string{"model"},
		window: 15 * time.Minute, minSamples: 20, measures: []string{MeasureDuration, MeasureTTFC}, format: formatMs,
		measure: func(ctx context.Context, _ *Evaluator, c *cycle, r *Rule, project string, window time.Duration) ([]sample, error) {
			stats, err := c.modelStats(ctx, project, window)
			if err != nil {
				return nil, err
			}
			win, since := formatWindow(window), c.now.Add(-window).UTC().Format(time.RFC3339)
			out := make([]sample, 0, len(stats))
			for _, s := range stats {
				sm := sample{subject: map[string]string{"model": s.Model}, examples: s.SlowestRuns, cond: above,
					runsQuery: url.Values{"model": {s.Model}, "since": {since}}}
				if r.Measure == MeasureTTFC {
					sm.value, sm.samples = s.TTFCP95Ms, s.TTFCCalls
					sm.detail = fmt.Sprintf("%d streamed calls in %s", s.TTFCCalls, win)
				} else {
					sm.value, sm.samples = s.P95Ms, s.Calls
					sm.detail = fmt.Sprintf("%d calls in %s", s.Calls, win)
				}
				out = append(out, sm)
			}
			return out, nil
		},
		summary: func(r *Rule, s sample, v, op, t string) string {
			what := "p95 latency"
			if r.Measure == MeasureTTFC {
				what = "p95 time to first chunk"
			}
			return fmt.Sprintf("model %s %s %s %s %s (%s)", s.subject["model"], what, v, op, t, s.detail)
		},
	}
}
