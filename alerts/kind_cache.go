package alerts

import (
	"context"
	"fmt"
	"net/url"
	"time"
)

// KindCacheReadZero: the cache check says never_hit for an (agent, model):
// enough cacheable calls, zero cache-read tokens. No threshold.
const KindCacheReadZero Kind = "cache_read_zero"

func cacheReadZero() kindSpec {
	return kindSpec{
		kind:        KindCacheReadZero,
		description: "Calls large enough to be cached read nothing from the prompt cache: something at the start of the prompt (a timestamp, a random id, reordered tools) changes on every call and silently invalidates the cache.",
		unit:        "unused", subjects: []string{"agent", "model"},
		window: time.Hour, minSamples: 10, noThreshold: true, format: formatPlain,
		measure: func(ctx context.Context, e *Evaluator, c *cycle, _ *Rule, project string, window time.Duration) ([]sample, error) {
			if e.cfg.Cache == nil {
				return nil, nil
			}
			verdicts, err := e.cfg.Cache.CacheVerdicts(ctx, project, c.now.Add(-window), c.now)
			if err != nil {
				return nil, err
			}
			win, since := formatWindow(window), c.now.Add(-window).UTC().Format(time.RFC3339)
			out := make([]sample, 0, len(verdicts))
			for _, v := range verdicts {
				never := v.Verdict == VerdictNeverHit
				out = append(out, sample{
					subject: map[string]string{"agent": v.Agent, "model": v.Model},
					value:   float64(v.CacheReadTokens), samples: v.EligibleCalls, examples: v.ExampleTraceIDs,
					detail: fmt.Sprintf("%d cacheable calls in %s, verdict %s", v.EligibleCalls, win, v.Verdict),
					cond: func(_, _ float64, samples, minSamples int) bool {
						return never && samples >= minSamples
					},
					runsQuery: url.Values{"agent": {v.Agent}, "model": {v.Model}, "since": {since}},
				})
			}
			return out, nil
		},
		summary: func(_ *Rule, s sample, v, op, _ string) string {
			return fmt.Sprintf("agent %s on model %s read %s tokens from the prompt cache (%s)",
				s.subject["agent"], s.subject["model"], v, s.detail)
		},
	}
}
