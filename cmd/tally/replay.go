package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tallyhq/tally/query"
	"github.com/tallyhq/tally/replay"
	"github.com/tallyhq/tally/replay/columnar"
	"github.com/tallyhq/tally/support/params"
)

func newReplayCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "replay",
		Short: "Export runs as replay fixtures, and serve fixtures to agents under test",
		Long: `Replay turns what a recorded run's tools returned into a deterministic
fixture (format tally.replay/v1, see replay/FORMAT.md). A test loads it with the
Go package github.com/tallyhq/tally/replay, or points an agent written in any
language at 'tally replay serve', and every tool call is answered exactly as it
was in production.`,
	}
	cmd.AddCommand(newReplayExportCmd(), newReplayServeCmd())
	return cmd
}

// Export formats.
const (
	formatJSON    = "json"
	formatArrow   = "arrow"
	formatParquet = "parquet"
)

// maxExportRuns bounds how many runs one export selects by filter.
const maxExportRuns = 10000

// exportFilter selects runs through GET /api/v1/runs.
type exportFilter struct {
	conversation, since, until, agent, task string
	limit                                   int
}

func (f exportFilter) empty() bool {
	return f.conversation == "" && f.since == "" && f.until == "" && f.agent == "" && f.task == ""
}

func newReplayExportCmd() *cobra.Command {
	var (
		filter     exportFilter
		out        string
		format     string
		inferences bool
	)
	cmd := &cobra.Command{
		Use:   "export [trace_id...] -o DIR|FILE",
		Short: "Export runs as replay fixtures (JSON), or their tool calls as one Arrow or Parquet file",
		Long: `Export fetches each run's fixture from a running tally (GET
/api/v1/runs/{trace_id}/fixture, read scope) and writes it.

Runs are the trace ids given, plus the runs matching --conversation, --since,
--until, --agent and --task (oldest first).

--format json (default) writes one fixture per run: -o DIR writes
DIR/<trace_id>.fixture.json (DIR is created when missing); -o FILE.json writes
that file and needs exactly one run. --format arrow or parquet writes one file of
all the runs' tool calls, one row per call (schema in replay/FORMAT.md); -o is
that file, or a directory that gets calls.arrow / calls.parquet.

Calls whose arguments or results were not captured (content capture off at the
agent, or dropped by a privacy rule) are listed for every run: they are in the
fixture without that content and cannot be replayed exactly.`,
		Example: `  tally replay export 4bf92f3577b34da6a3ce929d0e0e4736 -o testdata/checkout.fixture.json
  tally replay export --conversation conv-42 -o testdata/fixtures/
  tally replay export --agent researcher --since 7d --format parquet -o calls.parquet`,
	}
	c, apply := clientFlags(cmd)
	fs := cmd.Flags()
	fs.StringVarP(&out, "output", "o", "", "directory, or file (one JSON run, or the Arrow/Parquet file) to write (required)")
	fs.StringVar(&format, "format", formatJSON, "json (one fixture per run), arrow or parquet (one file of all calls)")
	fs.StringVar(&filter.conversation, "conversation", "", "also export the runs of this conversation")
	fs.StringVar(&filter.since, "since", "", "also export runs since: RFC 3339 or a duration before now (24h, 7d)")
	fs.StringVar(&filter.until, "until", "", "runs until this time (with another filter)")
	fs.StringVar(&filter.agent, "agent", "", "also export runs in which this agent ran")
	fs.StringVar(&filter.task, "task", "", "also export runs of this task")
	fs.IntVar(&filter.limit, "limit", 1000, "at most this many runs from the filters (the newest)")
	fs.BoolVar(&inferences, "inferences", false, "include the runs' model calls in JSON fixtures")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := apply(); err != nil {
			return err
		}
		if out == "" {
			return errors.New("--output (-o) is required: a directory, or a file")
		}
		if format != formatJSON && format != formatArrow && format != formatParquet {
			return fmt.Errorf("--format %q: want json, arrow or parquet", format)
		}
		if filter.limit < 1 || filter.limit > maxExportRuns {
			return fmt.Errorf("--limit %d: want 1 to %d", filter.limit, maxExportRuns)
		}
		ctx := cmd.Context()
		ids, err := exportTraceIDs(ctx, c, args, filter)
		if err != nil {
			return err
		}
		w := cmd.OutOrStdout()
		if format == formatJSON {
			return exportJSON(ctx, c, w, ids, out, inferences)
		}
		return exportBulk(ctx, c, w, ids, out, format)
	}
	return cmd
}

// exportTraceIDs is the runs to export: the ids given, in order, then the
// runs matching the filter, oldest first, each once.
func exportTraceIDs(ctx context.Context, c *apiClient, args []string, f exportFilter) ([]string, error) {
	var ids []string
	seen := map[string]bool{}
	add := func(id string) {
		if !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	for _, a := range args {
		// A short id (the UI's eight characters) is resolved by the API.
		id, _, err := params.TraceIDOrPrefix(a)
		if err != nil {
			return nil, err
		}
		add(id)
	}
	if f.empty() {
		if len(ids) == 0 {
			return nil, errors.New("nothing to export: give trace ids, or select runs with --conversation, --since, --agent or --task")
		}
		return ids, nil
	}
	var matched []string
	q := queryOf(map[string]string{"conversation": f.conversation, "since": f.since, "until": f.until,
		"agent": f.agent, "task": f.task})
	for len(matched) < f.limit {
		q.Set("limit", strconv.Itoa(min(f.limit-len(matched), 1000)))
		var page query.RunPage
		if err := c.get(ctx, "/api/v1/runs", q, &page); err != nil {
			return nil, fmt.Errorf("select runs: %w", err)
		}
		for _, r := range page.Runs {
			// The id names a file under -o: trust the server no more than
			// the command line.
			id, err := params.TraceID(r.TraceID)
			if err != nil {
				return nil, fmt.Errorf("select runs: the server answered %w", err)
			}
			matched = append(matched, id)
		}
		if page.NextCursor == "" {
			break
		}
		q.Set("cursor", page.NextCursor)
	}
	if len(matched) == 0 && len(ids) == 0 {
		return nil, errors.New("no runs match the filters")
	}
	slices.Reverse(matched) // the API lists newest first
	for _, id := range matched {
		add(id)
	}
	return ids, nil
}

// fetchFixture downloads one run's fixture: the server's deterministic bytes,
// as served, and the parsed fixture.
func fetchFixture(ctx context.Context, c *apiClient, traceID string, inferences bool) ([]byte, *replay.Fixture, error) {
	var q url.Values
	if inferences {
		q = url.Values{"inferences": {"true"}}
	}
	var raw json.RawMessage
	if err := c.get(ctx, "/api/v1/runs/"+traceID+"/fixture", q, &raw); err != nil {
		return nil, nil, fmt.Errorf("run %s: %w", traceID, err)
	}
	f, err := replay.Parse(raw)
	if err != nil {
		return nil, nil, fmt.Errorf("run %s: %w", traceID, err)
	}
	return raw, f, nil
}

// jsonTarget decides where JSON fixtures go: a file when out ends in .json
// (one run only), else a directory.
func jsonTarget(out string, runs int) (dir, file string, err error) {
	if strings.HasSuffix(strings.ToLower(out), ".json") {
		if st, err := os.Stat(out); err == nil && st.IsDir() {
			return out, "", nil
		}
		if runs != 1 {
			return "", "", fmt.Errorf("-o %s is a file, but %d runs were selected: give a directory", out, runs)
		}
		return "", out, nil
	}
	return out, "", nil
}

func exportJSON(ctx context.Context, c *apiClient, w io.Writer, ids []string, out string, inferences bool) error {
	dir, file, err := jsonTarget(out, len(ids))
	if err != nil {
		return err
	}
	// Fixtures of a directory export are written through an os.Root, so
	// that no name can leave the directory, whatever slipped through.
	var root *os.Root
	if dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("create %s: %w", dir, err)
		}
		if root, err = os.OpenRoot(dir); err != nil {
			return fmt.Errorf("open %s: %w", dir, err)
		}
		defer root.Close()
	} else if parent := filepath.Dir(file); parent != "." {
		if err := os.MkdirAll(parent, 0o755); err != nil {
			return fmt.Errorf("create %s: %w", parent, err)
		}
	}
	var total exportTotals
	for _, id := range ids {
		raw, f, err := fetchFixture(ctx, c, id, inferences)
		if err != nil {
			return err
		}
		path := file
		if root != nil {
			name := id + ".fixture.json"
			path = filepath.Join(dir, name)
			err = root.WriteFile(name, raw, 0o644)
		} else {
			err = os.WriteFile(path, raw, 0o644)
		}
		if err != nil {
			return fmt.Errorf("write fixture: %w", err)
		}
		printFixtureSummary(w, f, path)
		total.add(f)
	}
	total.print(w)
	return nil
}

func exportBulk(ctx context.Context, c *apiClient, w io.Writer, ids []string, out, format string) error {
	if st, err := os.Stat(out); (err == nil && st.IsDir()) || strings.HasSuffix(out, string(os.PathSeparator)) {
		out = filepath.Join(out, "calls."+format)
	}
	fixtures := make([]*replay.Fixture, 0, len(ids))
	for _, id := range ids {
		_, f, err := fetchFixture(ctx, c, id, false)
		if err != nil {
			return err
		}
		fixtures = append(fixtures, f)
	}
	if parent := filepath.Dir(out); parent != "." {
		if err := os.MkdirAll(parent, 0o755); err != nil {
			return fmt.Errorf("create %s: %w", parent, err)
		}
	}
	tmp, err := os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", out, err)
	}
	defer os.Remove(tmp.Name()) // a no-op after the rename
	write := columnar.WriteArrow
	if format == formatParquet {
		write = columnar.WriteParquet
	}
	// Hide tmp's Close: the Parquet writer closes a sink that has one.
	if err := write(struct{ io.Writer }{tmp}, fixtures); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", out, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", out, err)
	}
	if err := os.Rename(tmp.Name(), out); err != nil {
		return fmt.Errorf("write %s: %w", out, err)
	}
	var total exportTotals
	for _, f := range fixtures {
		printFixtureSummary(w, f, "")
		total.add(f)
	}
	fmt.Fprintf(w, "wrote %s: %d rows (one per call) of %d runs\n", out, total.calls, total.runs)
	total.print(w)
	return nil
}

// printFixtureSummary prints one run's line and, explicitly, each call whose
// arguments or result were not captured or were truncated.
func printFixtureSummary(w io.Writer, f *replay.Fixture, path string) {
	missing := 0
	for _, call := range f.Calls {
		if len(call.Missing) > 0 {
			missing++
		}
	}
	line := fmt.Sprintf("%s  %s  %d calls exported", f.Run.TraceID, f.Run.Task, len(f.Calls))
	switch {
	case len(f.Calls) == 0:
	case missing == 0:
		line += ", all captured"
	default:
		line += fmt.Sprintf(", %d not captured", missing)
	}
	if path != "" {
		line += " → " + path
	}
	fmt.Fprintln(w, line)
	for _, call := range f.Calls {
		if len(call.Missing) > 0 {
			fmt.Fprintf(w, "  not captured: #%d %s: %s\n", call.Seq, call.Tool, partsText(call.Missing))
		}
		if len(call.Truncated) > 0 {
			fmt.Fprintf(w, "  truncated at ingest: #%d %s: %s\n", call.Seq, call.Tool, partsText(call.Truncated))
		}
	}
}

// partsText names fixture parts in prose: "arguments", "arguments and result".
func partsText(parts []string) string {
	return strings.Join(parts, " and ")
}

// exportTotals sums an export for its last line.
type exportTotals struct {
	runs, calls, missing int
}

func (t *exportTotals) add(f *replay.Fixture) {
	t.runs++
	t.calls += len(f.Calls)
	for _, call := range f.Calls {
		if len(call.Missing) > 0 {
			t.missing++
		}
	}
}

func (t exportTotals) print(w io.Writer) {
	fmt.Fprintf(w, "exported %d runs, %d calls", t.runs, t.calls)
	if t.missing > 0 {
		fmt.Fprintf(w, "; %d calls have arguments or results that were not captured (content capture off, or a privacy rule): a replay cannot reproduce them exactly", t.missing)
	}
	fmt.Fprintln(w)
}

func newReplayServeCmd() *cobra.Command {
	var addr string
	var faults []string
	cmd := &cobra.Command{
		Use:   "serve FIXTURE...",
		Short: "Answer tool calls from fixtures over HTTP, for agents not written in Go",
		Long: `Serve loads fixtures written by 'tally replay export' and answers
POST /call {"trace_id"?, "tool", "arguments"} with the recorded result or error,
like the Go replay.Player in strict mode: identical calls get their recorded
answers in order, and a call the fixtures do not hold is a 404 naming the
closest recorded call and the arguments that differ. GET /report lists recorded
calls never made and unexpected calls. trace_id may be omitted with one
fixture. Stops on Ctrl-C, printing the report.

--fault answers a recorded call with a fault instead of its recording, once (or
attempts times) before the recording answers: seq=N:kind or tool=NAME:kind,
then ,key=value options. Kinds: timeout (504), rate_limit (429 with
Retry-After; retry_after_seconds=), server_error (status=, default 503),
truncated (half the result, or bytes=), unknown_tool, injection (the result
with text= appended). A fixture call's "fault" object does the same.`,
		Example: `  tally replay serve testdata/checkout.fixture.json --addr 127.0.0.1:8765
  curl -s localhost:8765/call -d '{"tool":"search","arguments":{"q":"hotels in Lisbon","limit":10}}'
  curl -s localhost:8765/report
  tally replay serve run.fixture.json --fault 'seq=2:timeout' --fault 'tool=search:rate_limit,retry_after_seconds=5'`,
		Args: cobra.MinimumNArgs(1),
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:8765", "listen address")
	cmd.Flags().StringArrayVar(&faults, "fault", nil, "answer a recorded call with a fault first: seq=N:kind[,key=value…] or tool=NAME:kind[,…] (repeatable; kinds "+strings.Join(replay.FaultKinds(), ", ")+")")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		var rules []replay.FaultRule
		for _, spec := range faults {
			r, err := replay.ParseFaultRule(spec)
			if err != nil {
				return fmt.Errorf("--fault: %w", err)
			}
			rules = append(rules, r)
		}
		fixtures := make([]*replay.Fixture, 0, len(args))
		byTrace := map[string]string{}
		for _, path := range args {
			f, err := replay.Load(path)
			if err != nil {
				return err
			}
			if prev, ok := byTrace[f.Run.TraceID]; ok {
				return fmt.Errorf("%s and %s hold the same run %s", prev, path, f.Run.TraceID)
			}
			byTrace[f.Run.TraceID] = path
			fixtures = append(fixtures, f)
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("listen: %w", err)
		}
		return serveReplay(cmd.Context(), ln, fixtures, rules, cmd.OutOrStdout())
	}
	return cmd
}

// serveReplay answers from strict players of fixtures on ln until ctx ends,
// then prints what the replay left over.
func serveReplay(ctx context.Context, ln net.Listener, fixtures []*replay.Fixture, faults []replay.FaultRule, w io.Writer) error {
	players := make([]*replay.Player, len(fixtures))
	calls := 0
	for i, f := range fixtures {
		players[i] = replay.NewPlayer(f, replay.Strict(), replay.WithFaults(faults...))
		calls += len(f.Calls)
	}
	rs := replay.NewServer(players...)
	srv := &http.Server{Handler: rs, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(w, "replaying %d fixture(s), %d recorded calls, on http://%s (POST /call, GET /report); Ctrl-C stops\n",
		len(fixtures), calls, ln.Addr())
	for _, f := range fixtures {
		fmt.Fprintf(w, "  %s  %s  %d calls\n", f.Run.TraceID, f.Run.Task, len(f.Calls))
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return fmt.Errorf("replay server: %w", err)
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		return fmt.Errorf("stop replay server: %w", err)
	}
	if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("replay server: %w", err)
	}
	report := rs.Report()
	for _, f := range report.Faults {
		fmt.Fprintf(w, "injected %s on call #%d %s of %s\n", f.Kind, f.Seq, f.Tool, f.TraceID)
	}
	if err := report.Err(); err != nil {
		fmt.Fprintln(w, err)
	} else {
		fmt.Fprintf(w, "replay clean: all %d recorded calls made, nothing unexpected\n", calls)
	}
	return nil
}
