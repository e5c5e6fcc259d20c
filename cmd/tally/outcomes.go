package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/tallyhq/tally/api"
	"github.com/tallyhq/tally/query"
)

// newOutcomeCmd is `tally outcome`: record a run's outcome through the API
// (POST /api/v1/runs/{trace_id}/outcomes, with an ingest key).
func newOutcomeCmd() *cobra.Command {
	var (
		in             api.OutcomeIn
		passed, failed bool
		score          float64
		asJSON         bool
	)
	cmd := &cobra.Command{
		Use:   "outcome <trace_id> --name NAME (--passed | --failed | --score S | --label L)",
		Short: "Record a run's outcome: an evaluator's or a reviewer's verdict, score or label",
		Args:  cobra.ExactArgs(1),
	}
	client, apply := clientFlags(cmd)
	cmd.Flags().Lookup("key").Usage = "API key with ingest scope (Authorization: Bearer)"
	cmd.Flags().StringVar(&in.Name, "name", "", "what was judged, e.g. resolved or correctness (required)")
	cmd.Flags().BoolVar(&passed, "passed", false, "the run passed")
	cmd.Flags().BoolVar(&failed, "failed", false, "the run failed")
	cmd.Flags().Float64Var(&score, "score", 0, "a score")
	cmd.Flags().StringVar(&in.Label, "label", "", "a label (pass/fail labels count as a verdict)")
	cmd.Flags().StringVar(&in.Explanation, "explanation", "", "why")
	cmd.Flags().StringVar(&in.Source, "source", "cli", "who judged")
	cmd.Flags().StringVar(&in.SpanID, "span", "", "the span judged (default the run)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the API's JSON")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := apply(); err != nil {
			return err
		}
		if passed && failed {
			return errors.New("--passed and --failed: give one")
		}
		if passed || failed {
			in.Passed = &passed
		}
		if cmd.Flags().Changed("score") {
			in.Score = &score
		}
		var rep api.OutcomesReport
		if err := client.post(cmd.Context(), "/api/v1/runs/"+url.PathEscape(args[0])+"/outcomes", in, &rep); err != nil {
			return err
		}
		if asJSON {
			return printJSON(cmd, rep)
		}
		for _, o := range rep.Outcomes {
			fmt.Fprintf(cmd.OutOrStdout(), "recorded %s for run %s: %s\n", o.Name, rep.TraceID, verdictText(o))
		}
		return nil
	}
	return cmd
}

// verdictText is an outcome in a few words: passed, failed, or its score
// and label.
func verdictText(o query.Outcome) string {
	s := ""
	switch {
	case o.Passed != nil && *o.Passed:
		s = "passed"
	case o.Passed != nil:
		s = "failed"
	}
	if o.Score != nil {
		s += " score " + strconv.FormatFloat(*o.Score, 'g', -1, 64)
	}
	if o.Label != "" {
		s += " label " + o.Label
	}
	return s
}

// newTasksCmd is `tally tasks`: consistency per task (GET /api/v1/tasks).
func newTasksCmd() *cobra.Command {
	var (
		since, until, by, outcome, task, agent string
		k                                      int
		asJSON                                 bool
	)
	cmd := &cobra.Command{
		Use:   "tasks",
		Short: "How consistent each task is: pass rate, pass@k and pass^k, and the spread of steps, tokens and cost",
		Args:  cobra.NoArgs,
	}
	client, apply := clientFlags(cmd)
	rangeFlags(cmd, &since, &until, "7d")
	cmd.Flags().StringVar(&by, "by", "task", "group runs by task or agent")
	cmd.Flags().StringVar(&outcome, "outcome", "", "grade runs by this outcome's verdict (default every outcome's)")
	cmd.Flags().StringVar(&task, "task", "", "only this task")
	cmd.Flags().StringVar(&agent, "agent", "", "only runs of this agent")
	cmd.Flags().IntVar(&k, "k", 3, "the k of pass@k and pass^k shown")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the API's JSON")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := apply(); err != nil {
			return err
		}
		q := url.Values{}
		for key, v := range map[string]string{"since": since, "until": until, "by": by, "outcome": outcome, "task": task, "agent": agent} {
			setIf(q, key, v)
		}
		q.Set("k", strconv.Itoa(k))
		var rep query.TasksReport
		if done, err := getOrPrint(cmd, client, "/api/v1/tasks", q, asJSON, &rep); done || err != nil {
			return err
		}
		out := cmd.OutOrStdout()
		if len(rep.Tasks) == 0 {
			_, err := fmt.Fprintln(out, "No runs in this range.")
			return err
		}
		ks := strconv.Itoa(k)
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintf(tw, "%s\tRUNS\tGRADED\tPASS RATE\tPASS@%s\tPASS^%s\tSTEPS p50/p99\tTOKENS p50 (cv)\tCOST/RUN\tCOST/SUCCESS\tGRADED BY\n", map[string]string{"task": "TASK", "agent": "AGENT"}[rep.By], ks, ks)
		for _, t := range rep.Tasks {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\t%s/%s\t%s (%.2f)\t%s\t%s\t%s\n", t.Key, t.Runs, t.Graded, pctOf(t.PassRate),
				pctAt(t.PassAtK, ks), pctAt(t.PassHatK, ks), strconv.FormatFloat(t.Steps.P50, 'f', -1, 64), strconv.FormatFloat(t.Steps.P99, 'f', -1, 64),
				fmtTokens(uint64(t.Tokens.P50)), t.Tokens.CV, fmtUSD(t.CostPerRun), usdOf(t.CostPerSuccess), t.VerdictsFrom)
		}
		if rep.Truncated {
			fmt.Fprintf(tw, "(the newest %d runs of the range)\n", rep.RunsRead)
		}
		return tw.Flush()
	}
	return cmd
}

// pctOf is a ratio as a percentage with one decimal, "-" for none.
func pctOf(p *float64) string {
	if p == nil {
		return "-"
	}
	return strconv.FormatFloat(*p*100, 'f', 1, 64) + "%"
}

// pctAt is pctOf of m[k], "-" when the sample is smaller than k.
func pctAt(m map[string]float64, k string) string {
	v, ok := m[k]
	if !ok {
		return "-"
	}
	return pctOf(&v)
}

// usdOf is fmtUSD of a cost that may be absent.
func usdOf(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmtUSD(*v)
}

// printJSON writes v as indented JSON.
func printJSON(cmd *cobra.Command, v any) error {
	enc := json.NewEncoder(cmd.OutOrStdout())
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
