package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/tallyhq/tally/alerts"
	"github.com/tallyhq/tally/query"
	"github.com/tallyhq/tally/support/params"
)

// newAlertsCmd is `tally alerts`.
func newAlertsCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "alerts", Short: "Check alert rules"}
	cmd.AddCommand(newAlertsCheckCmd())
	return cmd
}

// newAlertsCheckCmd is `tally alerts check`: evaluate every rule once
// against ClickHouse, print a table, exit 1 when anything would fire.
func newAlertsCheckCmd() *cobra.Command {
	var (
		st       storeFlags
		rules    string
		since    string
		projects []string
		prices   string
		asJSON   bool
	)
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Evaluate the alert rules once against ClickHouse; exit 1 when any would fire",
		Long: `Check evaluates every rule of the rules file once, now, over each rule's window
(or --since for all), reading ClickHouse directly. It ignores "for" (what would
fire if the condition held long enough) and sends nothing. It prints one line
per measured subject, firing ones first, and exits 1 when any would fire, 0
when none would, 2 on errors — usable in the CI of an agent repository.`,
		Args: cobra.NoArgs,
	}
	apply := configFlag(cmd)
	fs := cmd.Flags()
	st.register(fs)
	fs.StringVar(&rules, "rules", defaultRulesFile, "alert rules file (YAML)")
	fs.StringVar(&since, "since", "", "window for every rule instead of each rule's own (e.g. 1h, 7d)")
	fs.StringSliceVar(&projects, "project", nil, "projects to check (default: every project with recent spans)")
	fs.StringVar(&prices, "prices", "", "YAML price file adding to the built-in catalog (cache check's minimum prefixes)")
	fs.BoolVar(&asJSON, "json", false, "print JSON")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := apply(); err != nil {
			return err
		}
		ctx := cmd.Context()
		var window time.Duration
		if since != "" {
			now := time.Now()
			t, err := params.ParseTime(since, now)
			if err != nil || !t.Before(now) {
				return fmt.Errorf("--since %q: want a duration like 1h or 7d, or a past RFC 3339 time", since)
			}
			window = now.Sub(t)
		}
		ruleSet, err := alerts.LoadRules(rules)
		if err != nil {
			return err
		}
		catalog, err := loadCatalog(prices, "")
		if err != nil {
			return err
		}
		store, err := st.open(ctx)
		if err != nil {
			return err
		}
		defer store.Close()
		reader := query.NewReader(store)
		ev, err := alerts.NewEvaluator(alerts.Config{Rules: ruleSet, Source: reader, Projects: projects,
			Cache: alerts.CacheFromReports(query.NewCostReader(reader, catalog))})
		if err != nil {
			return err
		}
		results, err := ev.Check(ctx, window)
		if err != nil {
			return err
		}
		out := cmd.OutOrStdout()
		firing := 0
		for _, r := range results {
			if r.Firing {
				firing++
			}
		}
		if asJSON {
			enc := json.NewEncoder(out)
			enc.SetIndent("", "  ")
			if err := enc.Encode(results); err != nil {
				return err
			}
		} else {
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "STATUS\tRULE\tPROJECT\tSUBJECT\tSAMPLES\tSUMMARY")
			for _, r := range results {
				status := "ok"
				switch {
				case r.Firing:
					status = "FIRING"
				case r.Samples < r.MinSamples:
					status = "too few"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", status, r.Rule, r.Project,
					orDash(alerts.SubjectString(r.Subject)), strconv.Itoa(r.Samples)+"/"+strconv.Itoa(r.MinSamples), r.Summary)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			fmt.Fprintf(out, "%d of %d checks would fire (%d rules)\n", firing, len(results), len(ruleSet))
		}
		if firing > 0 {
			return &exitError{code: 1, msg: fmt.Sprintf("%d alerts would fire", firing)}
		}
		return nil
	}
	return cmd
}
