package alerts

import (
	"context"
	"fmt"
	"time"

	"github.com/tallyhq/tally/query"
)

// CacheReporter produces cache health reports; *query.CostReader implements
// it.
type CacheReporter interface {
	Cache(ctx context.Context, f query.CacheFilter) (query.CacheReport, error)
}

// CacheFromReports adapts a cache report source to CacheHealth: one verdict
// per (agent, model) group, with the group's example runs (for a never_hit
// group, its most recent runs with cacheable calls and no cache read).
func CacheFromReports(r CacheReporter) CacheHealth { return cacheReports{r} }

type cacheReports struct{ r CacheReporter }

// exampleRunIDs is how many example runs an alert carries, as for the other
// kinds.
const exampleRunIDs = 5

// CacheVerdicts runs one cache report over the window.
func (c cacheReports) CacheVerdicts(ctx context.Context, project string, since, until time.Time) ([]CacheVerdict, error) {
	rep, err := c.r.Cache(ctx, query.CacheFilter{Project: project, Since: since, Until: until})
	if err != nil {
		return nil, fmt.Errorf("cache health: %w", err)
	}
	out := make([]CacheVerdict, 0, len(rep.Groups))
	for _, g := range rep.Groups {
		out = append(out, CacheVerdict{Agent: g.Agent, Model: g.Model, Verdict: g.Verdict, EligibleCalls: int(g.EligibleCalls),
			CacheReadTokens: g.CacheReadTokens, ExampleTraceIDs: append([]string{}, firstN(g.ExampleRunIDs, exampleRunIDs)...)})
	}
	return out, nil
}
