package alerts

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/tallyhq/tally/query"
)

// KindQuery: any metrics query (docs/search.md) passes the threshold.
// Each series of the query's answer over the window (one per value of its
// by() fields) is a subject; its value is the series' figure over the
// whole window: `{ tool = "refund_payment" && status = error } |
// count_over_time() by (tool)` pages when refunds fail, `{ agent =
// "support" } | quantile_over_time(duration, .95)` when the agent slows.
const KindQuery Kind = "query"

func queryKind() kindSpec {
	return kindSpec{
		kind:        KindQuery,
		description: "A query's value passed its threshold.",
		unit:        "the query's unit (a rate per second, a count, seconds for durations, USD for cost)",
		subjects:    []string{"tool", "model", "agent", "task", "user"},
		window:      15 * time.Minute, minSamples: 1, format: formatPlain, zeroThreshold: true,
		measure: func(ctx context.Context, _ *Evaluator, c *cycle, r *Rule, project string, window time.Duration) ([]sample, error) {
			res, err := c.src.SearchMetrics(ctx, query.SearchRequest{Project: project, Query: r.Query,
				Since: c.now.Add(-window), Until: c.now}, window)
			if err != nil {
				return nil, fmt.Errorf("query %s: %w", r.Query, err)
			}
			runs := url.Values{"query": {spansetText(r.Query)}, "since": {c.now.Add(-window).UTC().Format(time.RFC3339)}}
			out := make([]sample, 0, len(res.Series))
			for _, s := range res.Series {
				out = append(out, sample{subject: queryLabels(s.Labels), value: s.Total, samples: 1, cond: above,
					detail: fmt.Sprintf("%s over %s", res.Fn, formatWindow(window)), runsQuery: runs})
			}
			return out, nil
		},
		summary: func(r *Rule, s sample, v, op, t string) string {
			var who []string
			for _, k := range slices.Sorted(maps.Keys(s.subject)) {
				who = append(who, k+"="+s.subject[k])
			}
			subject := ""
			if len(who) > 0 {
				subject = " for " + strings.Join(who, ", ")
			}
			return fmt.Sprintf("%s%s: %s %s %s (%s)", r.Query, subject, v, op, t, s.detail)
		},
	}
}

// checkQuery checks a query rule's query: a metrics query that parses.
func checkQuery(q string) error {
	if strings.TrimSpace(q) == "" {
		return fmt.Errorf("query: required for kind %s, a metrics query such as { status = error } | rate() by (tool)", KindQuery)
	}
	parsed, err := query.ParseSearch(q, query.SearchLimits{})
	if err != nil {
		return fmt.Errorf("query %q: %w", q, err)
	}
	if parsed.Metrics == nil {
		return fmt.Errorf("query %q: not a metrics query: end it with a metrics function, as in | rate() or | count_over_time() by (tool)", q)
	}
	return nil
}

// spansetText is a metrics query without its metrics function: the
// search the alert's link opens on the runs page.
func spansetText(q string) string {
	parsed, err := query.ParseSearch(q, query.SearchLimits{})
	if err != nil || parsed.Metrics == nil {
		return q
	}
	head := strings.TrimSpace(q[:parsed.Metrics.Pos])
	return strings.TrimSpace(strings.TrimSuffix(head, "|"))
}

// queryLabels names a series' labels as alert labels: tool, model,
// agent for those intrinsics, task and user for the run's, else the
// field's spelling with every character but letters, digits and
// underscores made an underscore (span.gen_ai.request.model becomes
// span_gen_ai_request_model); a quantile's p stays p.
func queryLabels(labels map[string]string) map[string]string {
	out := make(map[string]string, len(labels))
	for k, v := range labels {
		out[queryLabelName(k)] = v
	}
	return out
}

func queryLabelName(field string) string {
	switch field {
	case "trace:task":
		return "task"
	case "trace:user":
		return "user"
	}
	var b strings.Builder
	for i, r := range field {
		switch {
		case r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || (i > 0 && r >= '0' && r <= '9'):
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}
