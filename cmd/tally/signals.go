package main

import (
	"fmt"
	"net/url"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/tallyhq/tally/query"
	"github.com/tallyhq/tally/safety"
)

// newSignalsCmd is `tally signals`: the safety signals of recent runs by
// kind and tool (GET /api/v1/signals).
func newSignalsCmd() *cobra.Command {
	var (
		since, until, kind, tool, agent, task string
		asJSON                                bool
	)
	cmd := &cobra.Command{
		Use:   "signals",
		Short: "Safety signals of recent runs (duplicate side effects, unsafe retries, retry storms, runaway loops) by kind and tool",
		Args:  cobra.NoArgs,
	}
	client, apply := clientFlags(cmd)
	rangeFlags(cmd, &since, &until, "24h")
	cmd.Flags().StringVar(&kind, "kind", "", "only this kind: "+strings.Join(safety.Kinds(), ", "))
	cmd.Flags().StringVar(&tool, "tool", "", "only this tool")
	cmd.Flags().StringVar(&agent, "agent", "", "only runs of this agent")
	cmd.Flags().StringVar(&task, "task", "", "only runs of this task")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the API's JSON")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := apply(); err != nil {
			return err
		}
		q := url.Values{}
		for k, v := range map[string]string{"since": since, "until": until, "kind": kind, "tool": tool, "agent": agent, "task": task} {
			setIf(q, k, v)
		}
		var rep query.SignalsReport
		if done, err := getOrPrint(cmd, client, "/api/v1/signals", q, asJSON, &rep); done || err != nil {
			return err
		}
		out := cmd.OutOrStdout()
		if len(rep.Groups) == 0 {
			_, err := fmt.Fprintf(out, "No signals in %d runs.\n", rep.RunsRead)
			return err
		}
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "KIND\tTOOL\tSIGNALS\tRUNS\tEXAMPLE RUNS\tREASON")
		for _, g := range rep.Groups {
			short := make([]string, len(g.ExampleRuns))
			for i, id := range g.ExampleRuns {
				short[i] = id[:min(8, len(id))]
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\n", g.Kind, g.Tool, g.Signals, g.Runs, strings.Join(short, ","), g.Reason)
		}
		fmt.Fprintf(tw, "%d signals in %d runs\n", rep.Signals, rep.RunsRead)
		return tw.Flush()
	}
	return cmd
}
