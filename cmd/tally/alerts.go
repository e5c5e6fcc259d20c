package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tallyhq/tally/alerts"
	"github.com/tallyhq/tally/params"
	"github.com/tallyhq/tally/query"
)

func init() {
	extraCommands = append(extraCommands, newAlertsCmd)
	serveFlagHooks = append(serveFlagHooks, registerAlertFlags)
	serveHooks = append(serveHooks, wireAlerts)
}

// defaultRulesFile is the documented default rule set, relative to the
// working directory (the repository root for make run).
const defaultRulesFile = "deploy/alerts.yaml"

// alertStateFile is where alert state survives restarts, in the data dir.
const alertStateFile = "alerts-state.json"

// registerAlertFlags adds tally serve's alerting flags.
func registerAlertFlags(fs *pflag.FlagSet) {
	fs.String("alerts-rules", defaultRulesFile, "alert rules file (YAML); alerting is off when the default file is missing")
	fs.StringSlice("alertmanager-url", nil, "Alertmanager base URL to push alerts to (POST /api/v2/alerts); repeatable")
	fs.StringSlice("alerts-webhook-url", nil, "URL receiving alerts as a generic JSON webhook; repeatable")
	fs.Duration("alerts-interval", time.Minute, "how often alert rules are evaluated")
	fs.Duration("alerts-resend-interval", time.Minute, "how often a firing alert is re-sent to Alertmanager")
	fs.Duration("alerts-metrics-window", 15*time.Minute, "window of the tool and model gauges on /metrics")
	fs.Int("alerts-max-label-values", 200, "most distinct tool, model and agent label values on /metrics; more are counted as __other__")
}

// wireAlerts starts the alert evaluator as a server job: rules, state in the
// data dir, delivery targets, metrics on the server's registry.
func wireAlerts(env *serveEnv) error {
	f := env.flags
	rulesPath, _ := f.GetString("alerts-rules")
	amURLs, _ := f.GetStringSlice("alertmanager-url")
	hookURLs, _ := f.GetStringSlice("alerts-webhook-url")
	interval, _ := f.GetDuration("alerts-interval")
	resend, _ := f.GetDuration("alerts-resend-interval")
	window, _ := f.GetDuration("alerts-metrics-window")
	maxValues, _ := f.GetInt("alerts-max-label-values")
	// The tool, model and usage figures on /metrics come from their own
	// exporter, on every replica, whether or not alerting is on.
	exporter, err := alerts.NewExporter(alerts.ExporterConfig{Source: env.srv.Reader(), Registerer: env.srv.Registry(),
		Window: window, Interval: interval, MaxLabelValues: maxValues, Logger: env.log.With("component", "metrics")})
	if err != nil {
		return err
	}
	env.srv.AddJob(exporter.Run)
	if rulesPath == "" {
		env.log.Info("alerting off: no --alerts-rules")
		return nil
	}
	rules, err := alerts.LoadRules(rulesPath)
	if errors.Is(err, fs.ErrNotExist) && !f.Changed("alerts-rules") {
		env.log.Info("alerting off: no rules file", "path", rulesPath)
		return nil
	}
	if err != nil {
		return err
	}
	var targets []alerts.Target
	for _, u := range amURLs {
		targets = append(targets, alerts.NewAlertmanager(u, nil))
	}
	for _, u := range hookURLs {
		targets = append(targets, alerts.NewWebhook(u, nil))
	}
	reader := env.srv.Reader()
	ev, err := alerts.NewEvaluator(alerts.Config{
		Rules:          rules,
		Source:         reader,
		Cache:          alerts.CacheFromReports(query.NewCostReader(reader, env.catalog)),
		Targets:        targets,
		StatePath:      filepath.Join(env.dataDir, alertStateFile),
		ExternalURL:    env.externalURL,
		Interval:       interval,
		ResendInterval: resend,
		Registerer:     env.srv.Registry(),
		Logger:         env.log.With("component", "alerts"),
	})
	if err != nil {
		return err
	}
	job, err := evaluatorJob(env, func(ctx context.Context) { _ = ev.Run(ctx) })
	if err != nil {
		return err
	}
	env.srv.AddJob(job)
	env.srv.API().SetAlerts(ev)
	env.log.Info("alerting on", "rules", len(rules), "file", rulesPath, "alertmanagers", len(amURLs),
		"webhooks", len(hookURLs), "interval", interval)
	return nil
}

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
