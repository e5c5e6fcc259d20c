package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/tallyhq/tally/alerts"
	"github.com/tallyhq/tally/api"
	"github.com/tallyhq/tally/query"
	"github.com/tallyhq/tally/support/params"
)

// newAlertsCmd is `tally alerts`.
func newAlertsCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "alerts", Short: "What the server's alert rules fire, and checking rules"}
	cmd.AddCommand(newAlertsListCmd(), newAlertsHistoryCmd(), newAlertsRulesCmd(), newAlertsCheckCmd(), newAlertsTryCmd())
	return cmd
}

// newAlertsListCmd is `tally alerts list`: the server's pending, firing
// and recently resolved alerts, through the API.
func newAlertsListCmd() *cobra.Command {
	var state string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "The alerts the server has pending, firing or recently resolved",
		Args:  cobra.NoArgs,
	}
	cmd.Flags().StringVar(&state, "state", "", "only alerts in this state: pending, firing or resolved")
	return readCmd(cmd, func([]string) (string, url.Values) {
		return "/api/v1/alerts", queryOf(map[string]string{"state": state})
	}, func(out io.Writer, rep api.AlertsReport) error {
		if len(rep.Alerts) == 0 {
			_, err := fmt.Fprintln(out, "No alerts pending, firing or recently resolved.")
			return err
		}
		now := time.Now()
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "STATE\tRULE\tSEVERITY\tSUBJECT\tFOR\tSUMMARY")
		for _, a := range rep.Alerts {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", a.State, a.Rule, orDash(a.Labels["severity"]),
				orDash(alerts.SubjectString(subjectOf(a.Labels))), timeInState(a, now), a.Annotations["summary"])
		}
		return tw.Flush()
	})
}

// newAlertsHistoryCmd is `tally alerts history`: the alerts that fired
// over a time range, with when they resolved, through the API.
func newAlertsHistoryCmd() *cobra.Command {
	var since, until, rule string
	cmd := &cobra.Command{
		Use:   "history",
		Short: "The alerts that fired over a time range and when they resolved",
		Args:  cobra.NoArgs,
	}
	cmd.Flags().StringVar(&since, "since", "7d", "from this time (RFC 3339) or this long ago (7d, 24h)")
	cmd.Flags().StringVar(&until, "until", "", "up to this time or this long ago (default now)")
	cmd.Flags().StringVar(&rule, "rule", "", "only this rule's alerts")
	return readCmd(cmd, func([]string) (string, url.Values) {
		return "/api/v1/alerts/history", queryOf(map[string]string{"since": since, "until": until, "rule": rule})
	}, func(out io.Writer, rep api.AlertHistoryReport) error {
		if len(rep.Episodes) == 0 {
			_, err := fmt.Fprintf(out, "No alert fired since %s.\n", rep.Since.Local().Format(time.DateTime))
			return err
		}
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "FIRED\tRESOLVED\tFOR\tRULE\tSEVERITY\tSUBJECT\tSUMMARY")
		for _, ep := range rep.Episodes {
			resolved := "firing"
			if !ep.ResolvedAt.IsZero() {
				resolved = ep.ResolvedAt.Local().Format(time.DateTime)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", ep.FiredAt.Local().Format(time.DateTime), resolved,
				time.Duration(ep.DurationS*float64(time.Second)).Round(time.Second), ep.Rule, orDash(ep.Severity),
				orDash(alerts.SubjectString(subjectOf(ep.Labels))), ep.Summary)
		}
		return tw.Flush()
	})
}

// subjectOf picks the subject labels (tool, model, agent, task) of an alert.
func subjectOf(labels map[string]string) map[string]string {
	out := map[string]string{}
	for _, k := range []string{"tool", "model", "agent", "task"} {
		if v, ok := labels[k]; ok {
			out[k] = v
		}
	}
	return out
}

// timeInState is how long an alert has been in its state, to the second.
func timeInState(a alerts.Status, now time.Time) string {
	since := a.ActiveAt
	switch a.State {
	case alerts.StateFiring:
		since = a.FiredAt
	case alerts.StateResolved:
		since = a.ResolvedAt
	}
	if since.IsZero() {
		return "-"
	}
	return now.Sub(since).Round(time.Second).String()
}

// newAlertsRulesCmd is `tally alerts rules`: the rules the server loaded.
func newAlertsRulesCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rules",
		Short: "The alert rules the server evaluates, with thresholds, severity and state",
		Args:  cobra.NoArgs,
	}
	return readCmd(cmd, func([]string) (string, url.Values) {
		return "/api/v1/alerts/rules", nil
	}, func(out io.Writer, rep api.AlertRulesReport) error {
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "RULE\tKIND\tTHRESHOLD\tWINDOW\tFOR\tSEVERITY\tFIRING\tPENDING\tRUNBOOK")
		for _, r := range rep.Rules {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\n", r.Name, r.Kind, alerts.FormatThreshold(&r.Rule),
				time.Duration(r.Window), time.Duration(r.For), orDash(r.Severity), r.Firing, r.Pending, orDash(r.RunbookURL))
		}
		return tw.Flush()
	})
}

// newAlertsCheckCmd is `tally alerts check`: ask the server to evaluate
// every loaded rule once, print a table, exit 1 when anything would fire.
func newAlertsCheckCmd() *cobra.Command {
	var (
		since  string
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Evaluate the server's alert rules once, now; exit 1 when any would fire",
		Long: `Check asks the server (--server) to evaluate every rule it loaded once, now,
over each rule's window (or --since for all) in the key's project. It ignores
"for" (what would fire if the condition held long enough) and sends nothing.
It prints one line per measured subject, firing ones first, and exits 1 when
any would fire, 0 when none would, 2 on errors — usable in the CI of an agent
repository. To evaluate a rules file the server has not loaded, use
'tally alerts try'.`,
		Args: cobra.NoArgs,
	}
	client, apply := clientFlags(cmd)
	cmd.Flags().StringVar(&since, "since", "", "window for every rule instead of each rule's own (e.g. 1h, 7d)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the results as JSON")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := apply(); err != nil {
			return err
		}
		q := url.Values{}
		setIf(q, "since", since)
		var rep api.AlertCheckReport
		if err := client.get(cmd.Context(), "/api/v1/alerts/check", q, &rep); err != nil {
			return err
		}
		return printCheck(cmd.OutOrStdout(), rep.Results, rep.Rules, asJSON)
	}
	return cmd
}

// newAlertsTryCmd is `tally alerts try`: evaluate a rules file once,
// reading ClickHouse directly — to try rules before a server loads them.
func newAlertsTryCmd() *cobra.Command {
	var (
		st       storeFlags
		since    string
		projects []string
		prices   string
		asJSON   bool
	)
	cmd := &cobra.Command{
		Use:   "try RULES.yaml",
		Short: "Evaluate a rules file once against ClickHouse; exit 1 when any would fire",
		Long: `Try evaluates every rule of a rules file once, now, reading ClickHouse
directly: to see what rules would do before 'tally serve' loads them. Output
and exit status are those of 'tally alerts check'.`,
		Args: cobra.ExactArgs(1),
	}
	apply := configFlag(cmd)
	fs := cmd.Flags()
	st.register(fs, nil)
	fs.StringVar(&since, "since", "", "window for every rule instead of each rule's own (e.g. 1h, 7d)")
	fs.StringSliceVar(&projects, "project", nil, "projects to check (default: every project with recent spans)")
	fs.StringVar(&prices, "prices", "", "YAML price file adding to the built-in catalog (cache check's minimum prefixes)")
	fs.BoolVar(&asJSON, "json", false, "print the results as JSON")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
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
		ruleSet, err := alerts.LoadRules(args[0])
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
		results, err := ev.Check(ctx, window, nil)
		if err != nil {
			return err
		}
		return printCheck(cmd.OutOrStdout(), results, len(ruleSet), asJSON)
	}
	return cmd
}

// printCheck prints a check's results (a table, or JSON) and returns the
// exit-1 error when any would fire.
func printCheck(out io.Writer, results []alerts.CheckResult, rules int, asJSON bool) error {
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
		fmt.Fprintf(out, "%d of %d checks would fire (%d rules)\n", firing, len(results), rules)
	}
	if firing > 0 {
		return &exitError{code: 1, msg: fmt.Sprintf("%d alerts would fire", firing)}
	}
	return nil
}
