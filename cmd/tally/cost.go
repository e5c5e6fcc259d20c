package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/tallyhq/tally/attribution"
	"github.com/tallyhq/tally/ingest"
	"github.com/tallyhq/tally/query"
	"github.com/tallyhq/tally/rollup"
	"github.com/tallyhq/tally/support/params"
)

func newCostCmd() *cobra.Command {
	var by, since, until, bucket string
	var limit int
	cmd := &cobra.Command{
		Use:   "cost",
		Short: "Spend and tokens per agent, model, task… (from a running tally)",
		Long: "Spend and tokens per value of --by over a time range, with the retry tax (inference spent on\n" +
			"failed or retried tool calls) and the models no price matched. --bucket adds a time series.",
	}
	fs := cmd.Flags()
	fs.StringVar(&by, "by", query.ByAgent, "group by: "+strings.Join(query.CostDimensions(), ", "))
	rangeFlags(cmd, &since, &until, "24h")
	fs.StringVar(&bucket, "bucket", "", "time series bucket: minute (ranges up to 24h), hour or day")
	fs.IntVar(&limit, "limit", 0, fmt.Sprintf("the most groups listed, the costliest first (default %d, at most %d); the others on one line", query.DefaultCostGroups, query.MaxCostGroups))
	return readCmd(cmd, func([]string) (string, url.Values) {
		q := url.Values{"by": {by}} // even empty: the API's answer to it
		setIf(q, "since", since)
		setIf(q, "until", until)
		setIf(q, "bucket", bucket)
		if limit != 0 {
			q.Set("limit", strconv.Itoa(limit))
		}
		return "/api/v1/costs", q
	}, printCosts)
}

// exactShare is the share of t's spend whose cost is exact ("-" without
// spend).
func exactShare(t query.CostTotals) string {
	if t.Cost.Total <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", 100*t.ByConfidence.CostExact/t.Cost.Total)
}

// orNone shows an empty dimension value.
func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// printCosts writes a cost report: the groups and their total, the time
// series with --bucket, the models without a price.
func printCosts(w io.Writer, rep query.CostReport) error {
	fmt.Fprintf(w, "cost by %s, %s – %s\n\n", rep.By, rep.Since.Local().Format(time.DateTime), rep.Until.Local().Format(time.DateTime))
	if len(rep.Groups) == 0 {
		_, err := fmt.Fprintln(w, "no spans in this range")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%s\tCOST\tEXACT\tINPUT\tCACHE RD\tCACHE WR\tOUTPUT\tLLM\tTOOLS\tRETRIES\tRETRY TAX\tUNPRICED\t\n", strings.ToUpper(rep.By))
	row := func(key string, t query.CostTotals) {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%s\t%d\t\n", key, fmtUSD(t.Cost.Total), exactShare(t),
			fmtTokens(t.Usage.Input), fmtTokens(t.Usage.CacheRead), fmtTokens(t.Usage.CacheWrite),
			fmtTokens(t.Usage.Output), t.LLMCalls, t.ToolCalls, t.ToolRetries, fmtUSD(t.RetryTaxUSD), t.UnpricedSpans)
	}
	for _, g := range rep.Groups {
		row(orNone(g.Key), g.CostTotals)
	}
	if rep.Others != nil {
		row(fmt.Sprintf("(%d others)", rep.GroupsTotal-len(rep.Groups)), rep.Others.CostTotals)
	}
	row("TOTAL", rep.Total)
	if err := tw.Flush(); err != nil {
		return err
	}
	if rep.Bucket != "" {
		fmt.Fprintf(w, "\nper %s:\n", rep.Bucket)
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "TIME\t%s\tCOST\tINPUT\tOUTPUT\n", strings.ToUpper(rep.By))
		for _, g := range rep.Groups {
			for _, p := range g.Series {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", p.Time.Local().Format(time.DateTime), orNone(g.Key),
					fmtUSD(p.Cost.Total), fmtTokens(p.Usage.Input), fmtTokens(p.Usage.Output))
			}
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(rep.Unmatched) > 0 {
		fmt.Fprintln(w, "\nmodels without a price (their spans are not in COST; add them with --prices):")
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "PROVIDER\tMODEL\tSPANS\tINPUT\tOUTPUT")
		for _, m := range rep.Unmatched {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", orNone(m.Provider), m.Model, m.Spans, fmtTokens(m.InputTokens), fmtTokens(m.OutputTokens))
		}
		return tw.Flush()
	}
	return nil
}

func newCacheCmd() *cobra.Command {
	var (
		since, until, agent, model           string
		minCalls, minRunCalls, defaultPrefix int
	)
	cmd := &cobra.Command{
		Use:   "cache",
		Short: "Prompt-cache health per agent and model, and runs that never hit the cache",
	}
	fs := cmd.Flags()
	rangeFlags(cmd, &since, &until, "24h")
	fs.StringVar(&agent, "agent", "", "only this agent")
	fs.StringVar(&model, "model", "", "only this model")
	fs.IntVar(&minCalls, "min-eligible-calls", 0, "eligible calls without a cache read that make an agent/model never_hit (server default 5)")
	fs.IntVar(&minRunCalls, "min-eligible-run-calls", 0, "the same for one run (server default 2)")
	fs.IntVar(&defaultPrefix, "default-min-prefix", 0, "minimum cacheable prefix assumed for models not in the catalog (server default 1024)")
	return readCmd(cmd, func([]string) (string, url.Values) {
		q := queryOf(map[string]string{"since": since, "until": until, "agent": agent, "model": model})
		for k, v := range map[string]int{"min_eligible_calls": minCalls, "min_eligible_run_calls": minRunCalls,
			"default_min_prefix_tokens": defaultPrefix} {
			if v > 0 {
				q.Set(k, strconv.Itoa(v))
			}
		}
		return "/api/v1/cache", q
	}, printCache)
}

// printCache writes a cache report: each agent and model's verdict, the
// example runs of those that never hit, and the runs that never did.
func printCache(w io.Writer, rep query.CacheReport) error {
	th := rep.Thresholds
	fmt.Fprintf(w, "prompt cache, %s – %s (never_hit: ≥ %d eligible calls per agent/model, ≥ %d per run, no cache read)\n\n",
		rep.Since.Local().Format(time.DateTime), rep.Until.Local().Format(time.DateTime), th.MinEligibleCalls, th.MinEligibleRunCalls)
	if len(rep.Groups) == 0 {
		_, err := fmt.Fprintln(w, "no inference calls with usage in this range")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "AGENT\tMODEL\tCALLS\tELIGIBLE\tMIN PREFIX\tCACHE READ\tHIT RATIO\tVERDICT\tRUNS WITHOUT CACHE READ")
	for _, g := range rep.Groups {
		prefix := strconv.Itoa(g.MinPrefixTokens)
		switch g.PrefixSource {
		case attribution.PrefixDefault:
			prefix += " (default)"
		case attribution.PrefixNoCache:
			prefix = "no cache"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\t%.1f%%\t%s\t%d\n", orNone(g.Agent), orNone(g.Model), g.Calls,
			g.EligibleCalls, prefix, fmtTokens(g.CacheReadTokens), 100*g.HitRatio, g.Verdict, g.RunsWithoutCacheRead)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, g := range rep.Groups {
		if g.Verdict != attribution.VerdictNeverHit || len(g.ExampleRunIDs) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s on %s never read the cache; the latest %d of its %d runs with cacheable calls and no cache read (open with `tally run <trace id>`):\n",
			orNone(g.Agent), orNone(g.Model), len(g.ExampleRunIDs), g.RunsWithoutCacheRead)
		for _, id := range g.ExampleRunIDs {
			fmt.Fprintf(w, "  %s\n", id)
		}
	}
	if len(rep.NeverHitRuns) > 0 {
		fmt.Fprintln(w, "\nruns that never hit the cache (open with `tally run <trace id>`):")
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "TRACE ID\tSTART\tTASK\tAGENTS\tMODELS\tELIGIBLE\tINPUT")
		for _, r := range rep.NeverHitRuns {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\n", r.TraceID, r.Start.Local().Format("01-02 15:04:05"), r.Task,
				strings.Join(r.Agents, ","), strings.Join(r.Models, ","), r.EligibleCalls, fmtTokens(r.EligibleInputTokens))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if rep.RunsTruncated {
			fmt.Fprintln(w, "(more runs not shown)")
		}
	}
	return nil
}

func newRepriceCmd() *cobra.Command {
	var (
		st                                            storeFlags
		since, until, model, project, prices, litellm string
		asJSON                                        bool
		usageReading, usageProvider                   []string
	)
	cmd := &cobra.Command{
		Use:   "reprice",
		Short: "Re-derive stored spans' tokens and cost over a time range with the current rules and prices (idempotent)",
		Long: "Re-derive the usage and cost of the spans that started in [--since, --until) from what they\n" +
			"reported, with the current instrumentation readings (plus --usage-reading / --usage-provider) and the\n" +
			"built-in catalog plus --prices / --litellm-prices, and store the spans that changed again with a newer\n" +
			"version. A cost the client sent is kept. Running it twice is the same as once. The affected hours of\n" +
			"the cost rollup are recomputed afterwards. Talks to ClickHouse directly.",
	}
	apply := configFlag(cmd)
	fs := cmd.Flags()
	st.register(fs, nil)
	fs.StringVar(&since, "since", "", "start of the range (required): RFC 3339 or a duration before now (7d)")
	fs.StringVar(&until, "until", "", "end of the range (default now)")
	fs.StringVar(&model, "model", "", "only spans of this model (matched after normalization: gpt-4o matches gpt-4o-2024-08-06)")
	fs.StringVar(&project, "project", "", "only this project (default all)")
	fs.StringVar(&prices, "prices", "", "YAML price file adding to or overriding the built-in catalog")
	fs.StringVar(&litellm, "litellm-prices", "", "LiteLLM model_prices_and_context_window.json to load as overrides")
	fs.BoolVar(&asJSON, "json", false, "print the result as JSON")
	fs.StringSliceVar(&usageReading, "usage-reading", nil, "as tally serve --usage-reading: READING_OR_SCOPE=inclusive|exclusive (repeatable)")
	fs.StringSliceVar(&usageProvider, "usage-provider", nil, "as tally serve --usage-provider: PROVIDER=inclusive|exclusive (repeatable)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := apply(); err != nil {
			return err
		}
		usage, err := ingest.ParseUsagePolicy(usageReading, usageProvider)
		if err != nil {
			return err
		}
		if since == "" {
			return fmt.Errorf("--since is required")
		}
		now := time.Now()
		from, to, err := params.TimeRange(since, until, now)
		if err != nil {
			return err
		}
		if to.IsZero() {
			to = now.UTC()
		}
		catalog, err := loadCatalog(prices, litellm)
		if err != nil {
			return err
		}
		store, err := st.open(cmd.Context())
		if err != nil {
			return err
		}
		defer store.Close()
		job := rollup.New(store, rollup.Config{})
		res, err := rollup.Reprice(cmd.Context(), store, ingest.Options{Pricer: catalog, Usage: usage},
			rollup.RepriceFilter{Project: project, Since: from, Until: to, Model: model}, job)
		if err != nil {
			return err
		}
		if asJSON {
			return json.NewEncoder(cmd.OutOrStdout()).Encode(res)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "re-derived %s – %s: %d spans scanned, %d changed, %d with a client cost (kept); %d rollup hours recomputed\n",
			from.Format(time.RFC3339), to.Format(time.RFC3339), res.Scanned, res.Changed, res.ClientCost, res.Rollup.HoursRecomputed)
		return nil
	}
	return cmd
}
