package main

import (
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/tallyhq/tally/query"
	"github.com/tallyhq/tally/schema"
)

func newRunsCmd() *cobra.Command {
	var (
		since, until, agent, model, service, task, tool, status, search, cursor string
		sortBy, dir, hasErrors                                                  string
		limit                                                                   int
	)
	cmd := &cobra.Command{
		Use:   "runs",
		Short: "List runs, newest first (from a running tally)",
	}
	fs := cmd.Flags()
	// All time, newest first, as the runs page opens.
	rangeFlags(cmd, &since, &until, "")
	fs.StringVar(&agent, "agent", "", "only runs in which this agent ran")
	fs.StringVar(&model, "model", "", "only runs that called this model")
	fs.StringVar(&service, "service", "", "only runs of this service")
	fs.StringVar(&task, "task", "", "only runs of this task")
	fs.StringVar(&tool, "tool", "", "only runs that called this tool")
	fs.StringVar(&status, "status", "", "the run's outcome: ok or error")
	fs.StringVar(&hasErrors, "has-errors", "", "true: only runs with error spans (recovered or not); false: only runs without")
	fs.StringVar(&sortBy, "sort", "", "order across all pages: start (default), duration, cost, tokens, errors or retries")
	fs.StringVar(&dir, "dir", "", "desc (default: highest or newest first) or asc")
	fs.StringVar(&search, "search", "", "trace id prefix, conversation id or span name")
	fs.StringVar(&cursor, "cursor", "", "page cursor printed by a previous call")
	fs.IntVar(&limit, "limit", 20, "runs per page")
	return readCmd(cmd, func([]string) (string, url.Values) {
		q := queryOf(map[string]string{"since": since, "until": until, "agent": agent, "model": model,
			"service": service, "task": task, "tool": tool, "status": status, "q": search, "cursor": cursor,
			"sort": sortBy, "dir": dir, "has_errors": hasErrors})
		q.Set("limit", strconv.Itoa(limit))
		return "/api/v1/runs", q
	}, printRuns)
}

// printRuns writes a page of runs, and the cursor of the next.
func printRuns(w io.Writer, page query.RunPage) error {
	if len(page.Runs) == 0 {
		_, err := fmt.Fprintln(w, "no runs in this range; point an OpenTelemetry SDK at this server's /v1/traces, or run `tally demo`")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TRACE ID\tSTART\tTASK\tAGENTS\tDURATION\tLLM\tTOOLS\tIN\tCACHE RD\tOUT\tCOST\tCONFIDENCE\tSTATUS")
	for _, r := range page.Runs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", r.TraceID,
			r.Start.Local().Format("01-02 15:04:05"), r.Task, strings.Join(r.Agents, ","),
			fmtDuration(r.DurationMs), r.LLMCalls, r.ToolCalls, fmtTokens(r.Usage.Input),
			fmtTokens(r.Usage.CacheRead), fmtTokens(r.Usage.Output), fmtUSD(r.Cost.Total), orDash(r.CostConfidence), r.Status)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if page.NextCursor != "" {
		_, err := fmt.Fprintf(w, "more: --cursor %s\n", page.NextCursor)
		return err
	}
	return nil
}

func newRunCmd() *cobra.Command {
	var attrs bool
	cmd := &cobra.Command{
		Use:   "run <trace_id>",
		Short: "Print one run's span tree with cost and tokens per step",
		Args:  cobra.ExactArgs(1),
	}
	cmd.Flags().BoolVar(&attrs, "attributes", false, "print each span's attributes")
	return readCmd(cmd, func(args []string) (string, url.Values) {
		return "/api/v1/runs/" + url.PathEscape(args[0]), nil
	}, func(w io.Writer, run query.RunDetail) error {
		printRun(w, &run, attrs)
		return nil
	})
}

// printRun prints a run's header and its tree with box-drawing branches.
func printRun(w io.Writer, run *query.RunDetail, attrs bool) {
	s := run.Summary
	fmt.Fprintf(w, "run %s  %s  task %s  service %s\n", s.TraceID, s.Start.Local().Format(time.RFC3339), s.Task, s.Service)
	fmt.Fprintf(w, "%s  %d spans (%d LLM, %d tool, %d errors)  tokens in %s (cache read %s, write %s) out %s  cost %s (%s)\n",
		fmtDuration(s.DurationMs), s.Spans, s.LLMCalls, s.ToolCalls, s.Errors, fmtTokens(s.Usage.Input),
		fmtTokens(s.Usage.CacheRead), fmtTokens(s.Usage.CacheWrite), fmtTokens(s.Usage.Output), fmtUSD(s.Cost.Total), orDash(s.CostConfidence))
	for _, r := range run.CostConfidence {
		fmt.Fprintf(w, "  %s: %s (%s): %s\n", r.Level, r.Instrumentation, r.Versions, r.Reason)
	}
	fmt.Fprintln(w)
	var walk func(nodes []*query.SpanNode, prefix string)
	walk = func(nodes []*query.SpanNode, prefix string) {
		for i, n := range nodes {
			branch, next := "├─ ", "│  "
			if i == len(nodes)-1 {
				branch, next = "└─ ", "   "
			}
			fmt.Fprintf(w, "%s%s%s\n", prefix, branch, spanLine(n))
			if attrs {
				for _, kv := range n.Attributes {
					fmt.Fprintf(w, "%s%s    %s = %s\n", prefix, next, kv.Key, kv.Value)
				}
			}
			walk(n.Children, prefix+next)
		}
	}
	walk(run.Roots, "")
}

func spanLine(n *query.SpanNode) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s [%s] %s", n.Name, n.Type, fmtDuration(n.DurationMs))
	if n.Orphan {
		b.WriteString(" (parent missing)")
	}
	if n.Usage != nil {
		fmt.Fprintf(&b, "  in %s", fmtTokens(n.Usage.Input))
		if n.Usage.CacheRead > 0 {
			fmt.Fprintf(&b, " (cache %s)", fmtTokens(n.Usage.CacheRead))
		}
		fmt.Fprintf(&b, " out %s", fmtTokens(n.Usage.Output))
		if n.UsageMode == "aggregated" {
			b.WriteString(" (aggregate)")
		}
	}
	if n.Cost != nil && n.Cost.Total > 0 {
		fmt.Fprintf(&b, "  %s", fmtUSD(n.Cost.Total))
	}
	if n.Attempt > 1 {
		fmt.Fprintf(&b, "  attempt %d", n.Attempt)
	}
	if n.Status == schema.StatusError {
		b.WriteString("  ERROR")
		if n.ErrorType != "" {
			b.WriteString(" " + n.ErrorType)
		}
	}
	return b.String()
}
