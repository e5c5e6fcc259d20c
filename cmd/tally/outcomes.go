package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

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
	)
	cmd := &cobra.Command{
		Use:   "tasks",
		Short: "How consistent each task is: pass rate, pass@k and pass^k, and the spread of steps, tokens and cost",
		Args:  cobra.NoArgs,
	}
	rangeFlags(cmd, &since, &until, "7d")
	cmd.Flags().StringVar(&by, "by", "task", "group runs by task, agent or case (langfuse.experiment.item.id)")
	cmd.Flags().StringVar(&outcome, "outcome", "", "grade runs by this outcome's verdict (default every outcome's)")
	cmd.Flags().StringVar(&task, "task", "", "only this task")
	cmd.Flags().StringVar(&agent, "agent", "", "only runs of this agent")
	cmd.Flags().IntVar(&k, "k", 3, "the k of pass@k and pass^k shown")
	return readCmd(cmd, func([]string) (string, url.Values) {
		q := queryOf(map[string]string{"since": since, "until": until, "by": by, "outcome": outcome, "task": task, "agent": agent})
		q.Set("k", strconv.Itoa(k))
		return "/api/v1/tasks", q
	}, func(out io.Writer, rep query.TasksReport) error {
		if len(rep.Tasks) == 0 {
			_, err := fmt.Fprintln(out, "No runs in this range.")
			return err
		}
		ks := strconv.Itoa(k)
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintf(tw, "%s\tRUNS\tGRADED\tPASS RATE\tPASS@%s\tPASS^%s\tSTEPS p50/p99\tTOKENS p50 (cv)\tCOST/RUN\tCOST/SUCCESS\tGRADED BY\n", map[string]string{"task": "TASK", "agent": "AGENT", "case": "CASE"}[rep.By], ks, ks)
		for _, t := range rep.Tasks {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\t%s/%s\t%s (%.2f)\t%s\t%s\t%s\n", t.Key, t.Runs, t.Graded, pctOf(t.PassRate),
				pctAt(t.PassAtK, ks), pctAt(t.PassHatK, ks), strconv.FormatFloat(t.Steps.P50, 'f', -1, 64), strconv.FormatFloat(t.Steps.P99, 'f', -1, 64),
				fmtTokens(uint64(t.Tokens.P50)), t.Tokens.CV, fmtUSD(t.CostPerRun), usdOf(t.CostPerSuccess), t.VerdictsFrom)
		}
		if rep.Truncated {
			fmt.Fprintf(tw, "(the newest %d runs of the range)\n", rep.RunsRead)
		}
		return tw.Flush()
	})
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

// newVersionsCmd is `tally versions`: a task's versions (GET /api/v1/versions).
func newVersionsCmd() *cobra.Command {
	var since, until, task string
	cmd := &cobra.Command{
		Use:   "versions [--task T]",
		Short: "Each task's versions (configuration fingerprints) with first and last seen",
		Args:  cobra.NoArgs,
	}
	rangeFlags(cmd, &since, &until, "30d")
	cmd.Flags().StringVar(&task, "task", "", "only this task")
	return readCmd(cmd, func([]string) (string, url.Values) {
		return "/api/v1/versions", queryOf(map[string]string{"since": since, "until": until, "task": task})
	}, func(out io.Writer, rep api.VersionsReport) error {
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "TASK\tVERSION\tRUNS\tFIRST SEEN\tLAST SEEN\tPASS RATE\tAGENTS\tPROMPTS\tMODELS")
		for _, tv := range rep.Tasks {
			for _, v := range tv.Versions {
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", tv.Task, v.Fingerprint, v.Runs,
					v.FirstSeen.Local().Format(time.DateTime), v.LastSeen.Local().Format(time.DateTime), pctOf(v.PassRate),
					orDash(strings.Join(v.Config.AgentVersions, ",")), orDash(strings.Join(v.Config.Prompts, ",")),
					orDash(strings.Join(v.Config.Models, ",")))
			}
		}
		return tw.Flush()
	})
}

// newCompareCmd is `tally compare`: a task between two versions or two time
// ranges (GET /api/v1/compare); exits 1 when B is worse beyond noise on
// any metric with a test, so a CI gate can run it.
func newCompareCmd() *cobra.Command {
	var (
		since, until, task, a, b string
		asJSON                   bool
	)
	cmd := &cobra.Command{
		Use:   "compare --task T --a A --b B",
		Short: "A task between two versions (fingerprints) or two ranges (14d..7d): each metric, its change and whether it is beyond noise",
		Args:  cobra.NoArgs,
	}
	client, apply := clientFlags(cmd)
	rangeFlags(cmd, &since, &until, "30d")
	cmd.Flags().StringVar(&task, "task", "", "the task (required)")
	cmd.Flags().StringVar(&a, "a", "", "side A: a version fingerprint or a range SINCE..UNTIL (required)")
	cmd.Flags().StringVar(&b, "b", "", "side B: the same (required)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the API's JSON")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := apply(); err != nil {
			return err
		}
		if task == "" || a == "" || b == "" {
			return errors.New("--task, --a and --b are required")
		}
		q := queryOf(map[string]string{"task": task, "a": a, "b": b, "since": since, "until": until})
		var c query.Comparison
		if err := client.get(cmd.Context(), "/api/v1/compare", q, &c); err != nil {
			return err
		}
		worse := false
		for _, m := range c.Metrics {
			worse = worse || (m.Worse && m.Significant)
		}
		if asJSON {
			if err := printJSON(cmd, c); err != nil {
				return err
			}
		} else {
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintf(tw, "task %s: A %d runs, B %d runs\n", c.Task, c.A.Runs, c.B.Runs)
			fmt.Fprintln(tw, "METRIC\tA\tB\tB−A\tP\tTEST\tVERDICT")
			for _, m := range c.Metrics {
				verdict := "within noise"
				switch {
				case m.PValue == nil:
					verdict = "-"
				case m.Significant && m.Worse:
					verdict = "WORSE"
				case m.Significant:
					verdict = "better"
				}
				p := "-"
				if m.PValue != nil {
					p = strconv.FormatFloat(*m.PValue, 'g', 3, 64)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", m.Metric, metricText(m.Metric, m.A), metricText(m.Metric, m.B),
					metricText(m.Metric, m.Diff), p, m.Test, verdict)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
		}
		if worse {
			return &exitError{code: 1, msg: "B is worse than A beyond noise"}
		}
		return nil
	}
	return cmd
}

// metricText writes a comparison value in its metric's unit, "-" for none.
func metricText(metric string, v *float64) string {
	if v == nil {
		return "-"
	}
	switch metric {
	case query.MetricCostPerRun, query.MetricCostPerSuccess:
		return fmtUSD(*v)
	case query.MetricP95Duration:
		return fmtDuration(*v)
	case query.MetricStepsP50, query.MetricTokensP50:
		return strconv.FormatFloat(*v, 'f', -1, 64)
	}
	return strconv.FormatFloat(*v*100, 'f', 1, 64) + "%"
}
