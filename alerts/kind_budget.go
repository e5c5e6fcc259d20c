package alerts

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"time"
)

// KindRunCost: a run whose spans cost more than the threshold, USD.
const KindRunCost Kind = "run_cost"

// runCostExamples is how many over-budget runs one evaluation lists.
const runCostExamples = 20

func runCost() kindSpec {
	return kindSpec{
		kind:        KindRunCost,
		description: "Runs cost more than the budget.",
		unit:        "USD", window: 15 * time.Minute, minSamples: 1, format: formatUSD,
		measure: func(ctx context.Context, _ *Evaluator, c *cycle, r *Rule, project string, window time.Duration) ([]sample, error) {
			runs, err := c.src.RunsOverBudget(ctx, c.window(project, window), r.Threshold, runCostExamples)
			if err != nil {
				return nil, err
			}
			if len(runs) == 0 {
				return nil, nil
			}
			ids := make([]string, 0, len(runs))
			for _, run := range runs {
				ids = append(ids, run.TraceID)
			}
			n := strconv.Itoa(len(runs))
			if len(runs) == runCostExamples {
				n = "20 or more"
			}
			win, since := formatWindow(window), c.now.Add(-window).UTC().Format(time.RFC3339)
			return []sample{{subject: map[string]string{}, value: runs[0].CostUSD, samples: len(runs), examples: firstN(ids, 5),
				detail: fmt.Sprintf("%s runs over budget in %s", n, win), cond: above,
				runsQuery: url.Values{"since": {since}, "min_cost": {strconv.FormatFloat(r.Threshold, 'f', -1, 64)}}}}, nil
		},
		summary: func(_ *Rule, s sample, v, op, t string) string {
			return fmt.Sprintf("a run cost %s %s budget %s (%s)", v, op, t, s.detail)
		},
	}
}
