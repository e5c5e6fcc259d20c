package main

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/tallyhq/tally/query"
)

func newSearchCmd() *cobra.Command {
	var since, until, cursor string
	var limit int
	cmd := &cobra.Command{
		Use:   "search '<query>'",
		Short: "Find runs with a TraceQL query (from a running tally)",
		Long: "Find runs with a TraceQL query, as in tally's Runs page: span sets such as\n" +
			"'{ tool = \"refund_payment\" && span.amount > 500 }', structure ({A} >> {B}, {A} then {B}),\n" +
			"content ('{ content contains \"cancel my order\" }') and pipelines (| count() > 3).\n" +
			"docs/search.md has the language. The table is tally runs', with the spans each run matched.",
		Args: cobra.ExactArgs(1),
	}
	fs := cmd.Flags()
	fs.StringVar(&since, "since", "24h", "start of the window: a duration before now (24h, 7d) or an RFC 3339 time")
	fs.StringVar(&until, "until", "", "end of the window (default now)")
	fs.StringVar(&cursor, "cursor", "", "page cursor printed by a previous call")
	fs.IntVar(&limit, "limit", 20, "runs per page")
	var text string
	read := readCmd(cmd, func(args []string) (string, url.Values) {
		text = args[0]
		q := queryOf(map[string]string{"q": args[0], "since": since, "until": until, "cursor": cursor})
		q.Set("limit", strconv.Itoa(limit))
		return "/api/v1/search", q
	}, printSearch)
	run := read.RunE
	read.RunE = func(cmd *cobra.Command, args []string) error {
		err := run(cmd, args)
		var ae *apiError
		if errors.As(err, &ae) && ae.position != nil {
			return fmt.Errorf("%s\n  %s\n  %s^", ae.msg, text, strings.Repeat(" ", utf8.RuneCountInString(text[:min(*ae.position, len(text))])))
		}
		return err
	}
	return read
}

// printSearch writes a page of matched runs as tally runs does, each
// followed by the spans it matched, and the cursor of the next page.
func printSearch(w io.Writer, page query.SearchPage) error {
	if len(page.Runs) == 0 {
		msg := "no run matches in this window"
		if page.NextCursor != "" {
			msg += fmt.Sprintf(" among the %d runs examined; more: --cursor %s", page.Examined, page.NextCursor)
		}
		_, err := fmt.Fprintln(w, msg)
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TRACE ID\tSTART\tTASK\tAGENTS\tDURATION\tLLM\tTOOLS\tIN\tCACHE RD\tOUT\tCOST\tSTATUS\tMATCHED")
	for _, r := range page.Runs {
		var names []string
		for _, m := range r.Matches {
			names = append(names, m.Name)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", r.TraceID,
			r.Start.Local().Format("01-02 15:04:05"), r.Task, strings.Join(r.Agents, ","),
			fmtDuration(r.DurationMs), r.LLMCalls, r.ToolCalls, fmtTokens(r.Usage.Input),
			fmtTokens(r.Usage.CacheRead), fmtTokens(r.Usage.Output), fmtUSD(r.Cost.Total), r.Status, matchedList(names))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range page.Runs {
		for _, m := range r.Matches {
			for _, h := range m.Highlights {
				fmt.Fprintf(w, "%s %s (%s): %s\n", r.TraceID[:8], m.Name, h.Kind, marked(h))
			}
		}
	}
	if page.NextCursor != "" {
		_, err := fmt.Fprintf(w, "more: --cursor %s\n", page.NextCursor)
		return err
	}
	return nil
}

// matchedList is a run's matched span names, the first few and a count.
func matchedList(names []string) string {
	const show = 3
	if len(names) <= show {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:show], ", ") + fmt.Sprintf(" +%d", len(names)-show)
}

// marked is a highlight's text with its matches in »…«, on one line.
func marked(h query.Highlight) string {
	var b strings.Builder
	at := 0
	for _, r := range h.Ranges {
		b.WriteString(h.Text[at:r[0]])
		b.WriteString("»" + h.Text[r[0]:r[1]] + "«")
		at = r[1]
	}
	b.WriteString(h.Text[at:])
	return strings.Join(strings.Fields(b.String()), " ")
}
