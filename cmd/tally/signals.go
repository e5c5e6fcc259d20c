package main

import (
	"fmt"
	"io"
	"math"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/tallyhq/tally/query"
	"github.com/tallyhq/tally/safety"
)

// newSignalsCmd is `tally signals`: the safety signals of recent runs by
// kind and tool (GET /api/v1/signals).
func newSignalsCmd() *cobra.Command {
	var since, until, kind, tool, agent, task, by string
	cmd := &cobra.Command{
		Use:   "signals",
		Short: "Safety signals of recent runs (duplicate side effects, unsafe retries, hallucinated tools, ungated actions, budgets…) by kind and tool, and the tools' steps by status",
		Args:  cobra.NoArgs,
	}
	rangeFlags(cmd, &since, &until, "24h")
	cmd.Flags().StringVar(&kind, "kind", "", "only this kind: "+strings.Join(safety.KindNames(), ", "))
	cmd.Flags().StringVar(&tool, "tool", "", "only this tool")
	cmd.Flags().StringVar(&agent, "agent", "", "only runs of this agent")
	cmd.Flags().StringVar(&task, "task", "", "only runs of this task")
	cmd.Flags().StringVar(&by, "by", "tool", "group signals by tool, task or agent")
	return readCmd(cmd, func([]string) (string, url.Values) {
		return "/api/v1/signals", queryOf(map[string]string{"since": since, "until": until, "kind": kind, "tool": tool, "agent": agent, "task": task, "by": by})
	}, printSignals)
}

// printSignals writes a signals report: the signals by kind and tool (or
// task, or agent), then each tool's steps by terminal status.
func printSignals(out io.Writer, rep query.SignalsReport) error {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	if len(rep.Groups) == 0 {
		fmt.Fprintf(tw, "No signals in %d runs.\n", rep.RunsRead)
	} else {
		fmt.Fprintf(tw, "KIND\t%s\tSIGNALS\tRUNS\tEXAMPLE RUNS\tREASON\n", strings.ToUpper(rep.By))
		for _, g := range rep.Groups {
			short := make([]string, len(g.ExampleRuns))
			for i, id := range g.ExampleRuns {
				short[i] = id[:min(8, len(id))]
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\n", g.Kind, orDash(g.Tool+g.Task+g.Agent), g.Signals, g.Runs, strings.Join(short, ","), g.Reason)
		}
		fmt.Fprintf(tw, "%d signals in %d runs\n", rep.Signals, rep.RunsRead)
	}
	if len(rep.Tools) > 0 {
		// One column per terminal status, in safety.Statuses' order.
		fmt.Fprint(tw, "\nTOOL\tEFFECT\tSTEPS\t")
		for _, st := range safety.Statuses() {
			fmt.Fprint(tw, strings.ToUpper(string(st))+"\t")
		}
		fmt.Fprintln(tw, "SIGNALS")
		for _, t := range rep.Tools {
			fmt.Fprintf(tw, "%s\t%s\t%s\t", orDash(t.Tool), t.Effect, thousands(int64(t.Steps)))
			for _, st := range safety.Statuses() {
				fmt.Fprint(tw, thousands(int64(t.Statuses[st]))+"\t")
			}
			fmt.Fprintln(tw, thousands(int64(t.Signals)))
		}
	}
	return tw.Flush()
}

// newCapsCmd is `tally caps`: run caps set from data (GET /api/v1/caps).
func newCapsCmd() *cobra.Command {
	var since, until, task, agent, outcome, multiplier string
	cmd := &cobra.Command{
		Use:   "caps",
		Short: "Suggested run caps per task from the p99 of successful runs (iterations, tokens, cost, active time), and the runs over them",
		Long: `Caps reads the runs of the range and, per task, sets caps from the successful
ones (passed by their outcomes, else ended ok): multiplier × their p99 of model
calls, tokens, cost and active time (wall clock less approval waits, which are
reported apart). Each task's suggestion is printed as a --run-cap value for
tally serve, beside the caps configured now.`,
		Args: cobra.NoArgs,
	}
	rangeFlags(cmd, &since, &until, "7d")
	cmd.Flags().StringVar(&task, "task", "", "only this task")
	cmd.Flags().StringVar(&agent, "agent", "", "only runs of this agent")
	cmd.Flags().StringVar(&outcome, "outcome", "", "the outcome whose verdict makes a run successful (default: every verdict; status without)")
	cmd.Flags().StringVar(&multiplier, "multiplier", "", "caps are this many times the p99 (default 2.5, 1 to 10)")
	return readCmd(cmd, func([]string) (string, url.Values) {
		return "/api/v1/caps", queryOf(map[string]string{"since": since, "until": until, "task": task, "agent": agent, "outcome": outcome, "multiplier": multiplier})
	}, func(out io.Writer, rep query.CapsReport) error {
		if len(rep.Tasks) == 0 {
			_, err := fmt.Fprintf(out, "No task has successful runs among %d runs.\n", rep.RunsRead)
			return err
		}
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "TASK\tMEASURE\tP50\tP99\tSUGGESTED\tRUNS OVER")
		for _, t := range rep.Tasks {
			for _, m := range []struct {
				name string
				f    query.CapFigure
				fmt  func(float64) string
			}{
				{"iterations", t.Iterations, fmtNum}, {"tool calls", t.ToolCalls, fmtNum}, {"tokens", t.Tokens, fmtNum},
				{"cost", t.CostUSD, fmtUSD}, {"active time", t.ActiveMs, fmtDuration},
			} {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\n", t.Task, m.name, m.fmt(m.f.P50), m.fmt(m.f.P99), m.fmt(m.f.Suggested), m.f.Exceeded)
			}
			fmt.Fprintf(tw, "%s\t%d of %d runs successful (%s); %d over a suggested cap; %d waited for approval (p50 %s)\n", t.Task, t.Successful, t.Runs,
				t.VerdictsFrom, t.Exceeded, t.RunsWaiting, waitP50(t))
			fmt.Fprintf(tw, "%s\tsuggested: --run-cap '%s'\n", t.Task, t.Spec)
			for _, c := range t.Configured {
				fmt.Fprintf(tw, "%s\tconfigured: --run-cap '%s'\n", t.Task, c)
			}
		}
		return tw.Flush()
	})
}

// fmtNum writes a figure: whole numbers with thousands separators, others
// with up to two decimals.
func fmtNum(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return thousands(int64(v))
	}
	return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64)
}

// waitP50 is a task's median approval wait, "-" when no run waited.
func waitP50(t query.TaskCaps) string {
	if t.RunsWaiting == 0 {
		return "-"
	}
	return fmtDuration(t.WaitMs.P50)
}
