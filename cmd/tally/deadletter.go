package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/tallyhq/tally/server"
)

// newDeadLetterCmd is `tally deadletter`: the records ClickHouse refused
// for good, moved aside by the durable log so they do not block the
// records behind them (GET, POST and DELETE /api/v1/deadletter…, with a
// key of the metrics scope).
func newDeadLetterCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "deadletter",
		Short: "Records ClickHouse refused for good (dead letters): list, show, replay once the cause is fixed, or discard",
	}
	cmd.AddCommand(
		deadLetterCmd(&cobra.Command{Use: "list", Short: "List the dead-letter entries, oldest record first", Args: cobra.NoArgs}, listDeadLetters),
		deadLetterCmd(&cobra.Command{Use: "show ID", Short: "Show one entry: the store's answer and the runs its spans belong to", Args: cobra.ExactArgs(1)}, showDeadLetter),
		deadLetterCmd(&cobra.Command{Use: "replay ID", Short: "Append the entry's record to the durable log again (it is dead-lettered anew if ClickHouse still refuses it)", Args: cobra.ExactArgs(1)},
			actOnDeadLetter(http.MethodPost, "/replay", "Replayed %s into the durable log; `tally deadletter list` shows it again if ClickHouse still refuses it.\n")),
		deadLetterCmd(&cobra.Command{Use: "discard ID", Short: "Delete the entry: its spans are gone for good", Args: cobra.ExactArgs(1)},
			actOnDeadLetter(http.MethodDelete, "", "Discarded %s.\n")),
	)
	return cmd
}

// deadLetterRun runs one deadletter subcommand against a running tally.
type deadLetterRun func(cmd *cobra.Command, client *apiClient, args []string, asJSON bool) error

// deadLetterCmd gives c the client flags (a metrics-scope key) and --json,
// and runs run.
func deadLetterCmd(c *cobra.Command, run deadLetterRun) *cobra.Command {
	client, apply := clientFlags(c)
	c.Flags().Lookup("key").Usage = "API key with the metrics scope (Authorization: Bearer)"
	var asJSON bool
	c.Flags().BoolVar(&asJSON, "json", false, "print the API's JSON")
	c.RunE = func(c *cobra.Command, args []string) error {
		if err := apply(); err != nil {
			return err
		}
		return run(c, client, args, asJSON)
	}
	return c
}

// listDeadLetters is `tally deadletter list`.
func listDeadLetters(cmd *cobra.Command, client *apiClient, _ []string, asJSON bool) error {
	var l server.DeadLetterList
	if done, err := getOrPrint(cmd, client, "/api/v1/deadletter", nil, asJSON, &l); done || err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if len(l.Entries) == 0 {
		_, err := fmt.Fprintf(out, "No dead letters in %s.\n", l.Dir)
		return err
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tAT\tSPANS\tPROJECTS\tERROR")
	for _, e := range l.Entries {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", e.ID, e.At.Format("2006-01-02 15:04:05Z07:00"), e.Spans,
			strings.Join(e.Projects, ","), firstLine(e.Error, 120))
	}
	fmt.Fprintf(tw, "%d entries in %s\n", len(l.Entries), l.Dir)
	return tw.Flush()
}

// showDeadLetter is `tally deadletter show ID`.
func showDeadLetter(cmd *cobra.Command, client *apiClient, args []string, asJSON bool) error {
	var d server.DeadLetterDetail
	if done, err := getOrPrint(cmd, client, "/api/v1/deadletter/"+url.PathEscape(args[0]), nil, asJSON, &d); done || err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	e := d.Entry
	fmt.Fprintf(out, "Entry %s: record %d of the durable log, dead-lettered %s after %d refusals\n", e.ID, e.Seq,
		e.At.Format("2006-01-02 15:04:05Z07:00"), e.Attempts)
	fmt.Fprintf(out, "%d spans, %d content rows, %d bytes; ClickHouse said: %s\n\n", e.Spans, e.Contents, e.Bytes, e.Error)
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PROJECT\tRUN\tSPANS\tFIRST START\tLAST START\tNAMES")
	for _, t := range d.Traces {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\n", t.Project, t.TraceID, t.Spans, t.First.Format("2006-01-02 15:04:05"),
			t.Last.Format("2006-01-02 15:04:05"), strings.Join(t.Names, ", "))
	}
	return tw.Flush()
}

// actOnDeadLetter is a subcommand that sends method to the entry's path
// (plus suffix) and prints done with the entry's id, or with --json the
// API's answer.
func actOnDeadLetter(method, suffix, done string) deadLetterRun {
	return func(cmd *cobra.Command, client *apiClient, args []string, asJSON bool) error {
		var res json.RawMessage
		if err := client.do(cmd.Context(), method, "/api/v1/deadletter/"+url.PathEscape(args[0])+suffix, nil, nil, &res); err != nil {
			return err
		}
		if asJSON {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), string(res))
			return err
		}
		_, err := fmt.Fprintf(cmd.OutOrStdout(), done, args[0])
		return err
	}
}

// firstLine is s up to its first newline, cut at n runes.
func firstLine(s string, n int) string {
	s, _, _ = strings.Cut(s, "\n")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
