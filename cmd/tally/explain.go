package main

import (
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tallyhq/tally/query"
)

// newExplainCmd is `tally explain <trace_id> [span_id]`: how each stored
// token count and cost of a run was derived, through the API.
func newExplainCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "explain <trace_id> [span_id]",
		Short: "Show how a run's tokens and cost were derived: the instrumentation reading, each step, the price arithmetic",
		Long: `Explain prints, for every span of a run that carries usage or a cost (or for one
span), what the span reported, which instrumentation reading applied and why,
how each stored token count follows, the catalog entry and the cost
arithmetic, and whether the span counts in the run's totals. The derivation is
computed with the server's current rules; where the stored figures differ, it
says so (tally reprice re-derives them).`,
		Args: cobra.RangeArgs(1, 2),
	}
	return readCmd(cmd, func(args []string) (string, url.Values) {
		if len(args) == 2 {
			return "/api/v1/runs/" + url.PathEscape(args[0]) + "/spans/" + url.PathEscape(args[1]) + "/explain", nil
		}
		return "/api/v1/runs/" + url.PathEscape(args[0]) + "/explain", nil
	}, func(w io.Writer, out explanations) error {
		printExplanations(w, out.TraceID, out.Spans)
		return nil
	})
}

// explanations is the API's answer to an explain request.
type explanations struct {
	TraceID string                  `json:"trace_id"`
	Spans   []query.SpanExplanation `json:"spans"`
}

// printExplanations prints one block per span.
func printExplanations(w io.Writer, traceID string, spans []query.SpanExplanation) {
	fmt.Fprintf(w, "run %s: %d spans with usage or cost\n", traceID, len(spans))
	for _, s := range spans {
		counted := "counted"
		if !s.Counted {
			counted = "not counted"
		}
		fmt.Fprintf(w, "\n%s %s [%s] — %s: %s\n", s.SpanID, s.Name, s.Type, counted, s.CountedWhy)
		fmt.Fprintf(w, "  instrumentation: scope %q %s → reading %s\n", s.Scope, s.ScopeVersion, s.Reading)
		if s.Instrumentation != "" {
			fmt.Fprintf(w, "    %s\n    source: %s\n", s.Instrumentation, s.Source)
		}
		if len(s.Reported) > 0 {
			fmt.Fprintln(w, "  reported:")
			for _, r := range s.Reported {
				where := ""
				if r.OnResource {
					where = " (resource)"
				}
				fmt.Fprintf(w, "    %s = %s%s\n", r.Key, truncateLine(r.Value, 160), where)
			}
		}
		fmt.Fprintln(w, "  derivation:")
		for _, st := range s.Steps {
			fmt.Fprintf(w, "    - %s\n", st)
		}
		u := s.Usage
		fmt.Fprintf(w, "  stored: input %d (cache read %d, cache write %d), output %d (reasoning %d), mode %s\n",
			u.Input, u.CacheRead, u.CacheWrite, u.Output, u.Reasoning, s.UsageMode)
		if s.Stored != nil {
			fmt.Fprintf(w, "  NOTE the stored buckets differ (input %d, cache read %d, cache write %d, output %d): tally reprice re-derives them\n",
				s.Stored.Input, s.Stored.CacheRead, s.Stored.CacheWrite, s.Stored.Output)
		}
		if len(s.CostLines) > 0 {
			fmt.Fprintln(w, "  cost:")
			for _, l := range s.CostLines {
				fmt.Fprintf(w, "    %s\n", l)
			}
		}
		fmt.Fprintf(w, "  cost %s (%s)\n", fmtUSD(s.CostUSD), s.CostSource)
		if c := s.Confidence; c != nil {
			fmt.Fprintf(w, "  confidence: %s", c.Level)
			if c.Reason != "" {
				fmt.Fprintf(w, ": %s", c.Reason)
			}
			if c.Rule != "" {
				fmt.Fprintf(w, "\n    rule %s (%s, %s)\n    source: %s", c.Rule, c.Instrumentation, c.Versions, c.Source)
			}
			fmt.Fprintln(w)
		}
	}
}

// truncateLine shortens a value to n bytes for one line of output.
func truncateLine(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
