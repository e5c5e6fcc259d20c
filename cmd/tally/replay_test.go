package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/apache/arrow/go/v17/parquet"
	"github.com/apache/arrow/go/v17/parquet/pqarrow"

	"github.com/tallyhq/tally/internal/replaytest"
	"github.com/tallyhq/tally/internal/tallytest"
	"github.com/tallyhq/tally/internal/testenv"
	"github.com/tallyhq/tally/replay"
)

const (
	captured   = replaytest.CapturedTraceID
	uncaptured = replaytest.UncapturedTraceID
)

// runCLI runs the tally command line with args and returns what it printed.
func runCLI(ctx context.Context, out io.Writer, args ...string) error {
	root := newRootCmd()
	root.SetOut(out)
	root.SetErr(out)
	root.SetArgs(args)
	return root.ExecuteContext(ctx)
}

// startTrips starts tally and sends the trip run with content capture on and
// off.
func startTrips(t *testing.T) *tallytest.Instance {
	t.Helper()
	tally := tallytest.Start(t)
	replaytest.SendTrip(t, tally.URL, true, nil)
	replaytest.SendTrip(t, tally.URL, false, nil)
	return tally
}

// served is the fixture as the API serves it.
func served(t *testing.T, base, traceID string) []byte {
	t.Helper()
	resp, err := http.Get(base + "/api/v1/runs/" + traceID + "/fixture")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET fixture %s: %d %v", traceID, resp.StatusCode, err)
	}
	return body
}

// TestReplayExportJSON exports both trip runs through the CLI: each file is
// the fixture the API serves, and the output names, call by call, what was
// not captured: with capture off all four calls lack their arguments, and
// all but the failed get_weather (#2) their result.
func TestReplayExportJSON(t *testing.T) {
	tally := startTrips(t)
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "fixtures")
	var out bytes.Buffer
	if err := runCLI(ctx, &out, "replay", "export", captured, uncaptured, "-o", dir, "--server", tally.URL); err != nil {
		t.Fatalf("export: %v\n%s", err, out.String())
	}
	capturedPath := filepath.Join(dir, captured+".fixture.json")
	uncapturedPath := filepath.Join(dir, uncaptured+".fixture.json")
	want := captured + "  plan_trip  4 calls exported, all captured → " + capturedPath + "\n" +
		uncaptured + "  plan_trip  4 calls exported, 4 not captured → " + uncapturedPath + "\n" +
		"  not captured: #1 search: arguments and result\n" +
		"  not captured: #2 get_weather: arguments\n" +
		"  not captured: #3 get_weather: arguments and result\n" +
		"  not captured: #4 book: arguments and result\n" +
		"exported 2 runs, 8 calls; 4 calls have arguments or results that were not captured " +
		"(content capture off, or a privacy rule): a replay cannot reproduce them exactly\n"
	if out.String() != want {
		t.Errorf("output:\n%s\nwant:\n%s", out.String(), want)
	}
	for id, path := range map[string]string{captured: capturedPath, uncaptured: uncapturedPath} {
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, served(t, tally.URL, id)) {
			t.Errorf("%s is not the served fixture:\n%s", path, got)
		}
	}

	// One run to a named file.
	file := filepath.Join(t.TempDir(), "sub", "trip.json")
	out.Reset()
	if err := runCLI(ctx, &out, "replay", "export", captured, "-o", file, "--server", tally.URL); err != nil {
		t.Fatalf("export to file: %v\n%s", err, out.String())
	}
	if got, err := os.ReadFile(file); err != nil || !bytes.Equal(got, served(t, tally.URL, captured)) {
		t.Errorf("%s: %v\n%s", file, err, got)
	}

	// Runs selected by conversation: both runs are conv-42 and start at the
	// same time, so oldest first means trace id order, …319c then …319d.
	byConv := t.TempDir()
	out.Reset()
	if err := runCLI(ctx, &out, "replay", "export", "--conversation", "conv-42", "-o", byConv, "--server", tally.URL); err != nil {
		t.Fatalf("export by conversation: %v\n%s", err, out.String())
	}
	lines := strings.Split(out.String(), "\n")
	if !strings.HasPrefix(lines[0], captured+" ") || !strings.HasPrefix(lines[1], uncaptured+" ") {
		t.Errorf("runs of conv-42 not exported oldest first:\n%s", out.String())
	}
	entries, _ := os.ReadDir(byConv)
	if len(entries) != 2 {
		t.Errorf("%d files for conv-42, want 2", len(entries))
	}
}

func TestReplayExportRefuses(t *testing.T) {
	tally := startTrips(t)
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"no runs", []string{"-o", t.TempDir()}, "nothing to export"},
		{"two runs to one file", []string{captured, uncaptured, "-o", filepath.Join(t.TempDir(), "x.json")}, "2 runs were selected"},
		{"unknown run", []string{strings.Repeat("ab", 16), "-o", t.TempDir()}, "not found"},
		{"bad id", []string{"nothex", "-o", t.TempDir()}, "want 32 hex characters"},
		{"no output", []string{captured}, "--output"},
		{"bad format", []string{captured, "-o", t.TempDir(), "--format", "csv"}, "--format"},
		{"no match", []string{"--conversation", "nope", "-o", t.TempDir()}, "no runs match"},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"replay", "export", "--server", tally.URL}, c.args...)
			var out bytes.Buffer
			err := runCLI(context.Background(), &out, args...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}

// callRow is one bulk-export row as read back; nil pointers are nulls.
type callRow struct {
	TraceID               string
	Seq                   int32
	Tool, ToolCallID      string
	Arguments, Result     *string
	ErrorType             *string
	Status                string
	Attempt               int32
	DurationMs            float64
	StartedAtUs           int64
	ConversationID        string
	Agent, Task, ArgsHash string
}

func strp(s string) *string { return &s }

// wantRows are the rows of both trip runs, from replaytest.SendTrip's doc.
// 2025-03-01T10:00:00Z is unix 1740823200 s; calls start 1.02, 1.3, 1.9 and
// 2.1 s later. Arguments hash as in api/fixture_test.go; with capture off
// there is no hash, no arguments and no result.
func wantRows() []callRow {
	const (
		search  = "41694c00fa84c49e916c32d98e6ded15f55e3280582010ec74b64816492b9d19"
		weather = "0ee04e560ed3acf087b2285f8dc173d1828f479e2fceb2fa1fd10abf65e3ff1e"
		book    = "835939d924c9f7e607d3792fc37c030bd7700cb4743458ce98f2148bd821b13b"
		s0      = 1740823200000000
	)
	timeout := strp("timeout")
	rows := []callRow{
		{captured, 1, "search", "call_1", strp(`{"limit":10,"q":"hotels in Lisbon"}`),
			strp(`{"hits":[{"id":"h1","name":"Casa Azul"}]}`), nil, "unset", 0, 250, s0 + 1020000, "", "", "", search},
		{captured, 2, "get_weather", "", strp(`{"city":"Lisbon"}`), nil, timeout, "error", 1, 500, s0 + 1300000, "", "", "", weather},
		{captured, 3, "get_weather", "", strp(`{"city":"Lisbon"}`), strp(`{"sky":"clear","temp_c":18.5}`), nil, "unset", 2, 120, s0 + 1900000, "", "", "", weather},
		{captured, 4, "book", "", strp(`{"hotel_id":"h1","nights":3}`), strp("confirmed <ref ABC123> & emailed"), nil, "unset", 0, 250.5, s0 + 2100000, "", "", "", book},
		{uncaptured, 1, "search", "call_1", nil, nil, nil, "unset", 0, 250, s0 + 1020000, "", "", "", ""},
		{uncaptured, 2, "get_weather", "", nil, nil, timeout, "error", 1, 500, s0 + 1300000, "", "", "", ""},
		{uncaptured, 3, "get_weather", "", nil, nil, nil, "unset", 2, 120, s0 + 1900000, "", "", "", ""},
		{uncaptured, 4, "book", "", nil, nil, nil, "unset", 0, 250.5, s0 + 2100000, "", "", "", ""},
	}
	for i := range rows {
		rows[i].ConversationID, rows[i].Agent, rows[i].Task = "conv-42", "trip-planner", "plan_trip"
	}
	return rows
}

// rowsOf reads a record by the column names of columnar.CallsSchema.
func rowsOf(t *testing.T, rec arrow.Record) []callRow {
	t.Helper()
	col := func(name string) arrow.Array {
		idx := rec.Schema().FieldIndices(name)
		if len(idx) != 1 {
			t.Fatalf("no column %q in %s", name, rec.Schema())
		}
		return rec.Column(idx[0])
	}
	str := func(name string, i int) string { return col(name).(*array.String).Value(i) }
	opt := func(name string, i int) *string {
		if col(name).IsNull(i) {
			return nil
		}
		return strp(str(name, i))
	}
	var rows []callRow
	for i := 0; i < int(rec.NumRows()); i++ {
		rows = append(rows, callRow{
			TraceID: str("trace_id", i), Seq: col("seq").(*array.Int32).Value(i),
			Tool: str("tool", i), ToolCallID: str("tool_call_id", i),
			Arguments: opt("arguments", i), Result: opt("result", i), ErrorType: opt("error_type", i),
			Status: str("status", i), Attempt: col("attempt").(*array.Int32).Value(i),
			DurationMs:     col("duration_ms").(*array.Float64).Value(i),
			StartedAtUs:    int64(col("started_at").(*array.Timestamp).Value(i)),
			ConversationID: str("conversation_id", i), Agent: str("agent", i), Task: str("task", i),
			ArgsHash: str("args_hash", i),
		})
	}
	return rows
}

func checkRows(t *testing.T, format string, got []callRow) {
	t.Helper()
	want := wantRows()
	if len(got) != len(want) {
		t.Fatalf("%s: %d rows, want %d", format, len(got), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			g, _ := json.Marshal(got[i])
			w, _ := json.Marshal(want[i])
			t.Errorf("%s row %d:\n got %s\nwant %s", format, i, g, w)
		}
	}
}

// TestReplayExportArrowAndParquet writes both runs' calls as one Arrow IPC
// file and one Parquet file and reads them back with the arrow library.
func TestReplayExportArrowAndParquet(t *testing.T) {
	tally := startTrips(t)
	dir := t.TempDir()
	for _, format := range []string{"arrow", "parquet"} {
		path := filepath.Join(dir, "trips."+format)
		var out bytes.Buffer
		if err := runCLI(context.Background(), &out, "replay", "export", captured, uncaptured,
			"--format", format, "-o", path, "--server", tally.URL); err != nil {
			t.Fatalf("export %s: %v\n%s", format, err, out.String())
		}
		if !strings.Contains(out.String(), "wrote "+path+": 8 rows (one per call) of 2 runs\n") ||
			!strings.Contains(out.String(), "  not captured: #4 book: arguments and result\n") {
			t.Errorf("%s output:\n%s", format, out.String())
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var rows []callRow
		switch format {
		case "arrow":
			r, err := ipc.NewFileReader(bytes.NewReader(b))
			if err != nil {
				t.Fatalf("open arrow file: %v", err)
			}
			for i := 0; i < r.NumRecords(); i++ {
				rec, err := r.Record(i)
				if err != nil {
					t.Fatal(err)
				}
				rows = append(rows, rowsOf(t, rec)...)
			}
			r.Close()
		case "parquet":
			tbl, err := pqarrow.ReadTable(context.Background(), bytes.NewReader(b),
				parquet.NewReaderProperties(memory.DefaultAllocator), pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
			if err != nil {
				t.Fatalf("read parquet: %v", err)
			}
			tr := array.NewTableReader(tbl, -1)
			for tr.Next() {
				rows = append(rows, rowsOf(t, tr.Record())...)
			}
			tr.Release()
			tbl.Release()
		}
		checkRows(t, format, rows)
	}

	// A directory gets calls.<format>.
	var out bytes.Buffer
	if err := runCLI(context.Background(), &out, "replay", "export", captured, "--format", "arrow", "-o", dir, "--server", tally.URL); err != nil {
		t.Fatalf("export to dir: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "calls.arrow")); err != nil {
		t.Errorf("no calls.arrow in the output directory: %v", err)
	}
}

// lineWriter collects a command's output and hands over its first line.
type lineWriter struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	first chan string
	once  sync.Once
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if line, _, ok := strings.Cut(w.buf.String(), "\n"); ok {
		w.once.Do(func() { w.first <- line })
	}
	return len(p), nil
}

func (w *lineWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// post sends one POST /call and returns the status and body.
func post(t *testing.T, base, body string) (int, []byte) {
	t.Helper()
	resp, err := http.Post(base+"/call", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, bytes.TrimSpace(b)
}

// TestReplayServe starts `tally replay serve` in-process on a free port and
// makes the same calls to it and to a strict Player of the same fixture: the
// answers agree, and so do the reports.
func TestReplayServe(t *testing.T) {
	fixtureFile := filepath.Join("..", "..", "api", "testdata", "trip_fixture.json")
	fixture, err := replay.Load(fixtureFile)
	if err != nil {
		t.Fatal(err)
	}
	player := replay.NewPlayer(fixture, replay.Strict())

	ctx, cancel := context.WithCancel(context.Background())
	addr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	out := &lineWriter{first: make(chan string, 1)}
	done := make(chan error, 1)
	go func() { done <- runCLI(ctx, out, "replay", "serve", fixtureFile, "--addr", addr) }()
	var first string
	select {
	case first = <-out.first:
	case err := <-done:
		cancel()
		t.Fatalf("serve ended: %v\n%s", err, out.String())
	}
	wantFirst := "replaying 1 fixture(s), 4 recorded calls, on http://" + addr + " (POST /call, GET /report); Ctrl-C stops"
	if first != wantFirst {
		t.Errorf("first line %q, want %q", first, wantFirst)
	}
	base := "http://" + addr

	for _, c := range []struct {
		name, tool, args string
		status           int
		body             string // the answer, worked out from the fixture
	}{
		{"recorded result, other key order", "search", `{"limit":10,"q":"hotels in Lisbon"}`, 200,
			`{"result":{"hits":[{"id":"h1","name":"Casa Azul"}]}}`},
		{"first get_weather: the recorded timeout", "get_weather", `{"city":"Lisbon"}`, 200,
			`{"error":{"type":"timeout","message":"upstream timed out after 5s"}}`},
		{"second get_weather: the retry's result", "get_weather", `{"city": "Lisbon"}`, 200,
			`{"result":{"sky":"clear","temp_c":18.5}}`},
		{"third get_weather: answers used up", "get_weather", `{"city":"Lisbon"}`, 404,
			`{"error":{"type":"unexpected_call","message":"unexpected call get_weather(args {\"city\":\"Lisbon\"}): closest recorded call #2 get_weather has the same arguments but its 2 recorded answer(s) were already used"}}`},
		{"search with another limit", "search", `{"q":"hotels in Lisbon","limit":5}`, 404,
			`{"error":{"type":"unexpected_call","message":"unexpected call search(args {\"q\":\"hotels in Lisbon\",\"limit\":5}): closest recorded call #1 search differs at \"limit\": recorded 10, got 5"}}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			status, body := post(t, base, `{"tool":"`+c.tool+`","arguments":`+c.args+`}`)
			if status != c.status || string(body) != c.body {
				t.Errorf("POST /call: %d %s\nwant %d %s", status, body, c.status, c.body)
			}
			// The player answers the same call the same way.
			result, err := player.Call(context.Background(), c.tool, c.args)
			var (
				recorded   *replay.RecordedError
				unexpected *replay.UnexpectedCallError
				fromPlayer replay.CallResponse
			)
			switch {
			case err == nil:
				fromPlayer.Result = result
			case errors.As(err, &recorded):
				fromPlayer.Error = &replay.CallError{Type: recorded.Type, Message: recorded.Message}
			case errors.As(err, &unexpected):
				fromPlayer.Error = &replay.CallError{Type: replay.ErrorTypeUnexpectedCall, Message: unexpected.Error()}
			default:
				t.Fatalf("player: %v", err)
			}
			var fromServer replay.CallResponse
			if err := json.Unmarshal(body, &fromServer); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(fromServer, fromPlayer) {
				t.Errorf("server %+v, player %+v", fromServer, fromPlayer)
			}
		})
	}

	resp, err := http.Get(base + "/report")
	if err != nil {
		t.Fatal(err)
	}
	var report replay.Report
	if err := json.NewDecoder(resp.Body).Decode(&report); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	// Never made: #4 book. Unexpected: the third get_weather and the search with limit 5.
	if len(report.Unmet) != 1 || report.Unmet[0].Seq != 4 || report.Unmet[0].Tool != "book" || len(report.Unexpected) != 2 {
		t.Errorf("report %+v", report)
	}
	if !reflect.DeepEqual(report, player.Report()) {
		t.Errorf("server report %+v\nplayer report %+v", report, player.Report())
	}

	cancel() // Ctrl-C
	if err := <-done; err != nil {
		t.Fatalf("serve: %v", err)
	}
	wantReport := "replay: 1 recorded call(s) never made, 2 unexpected call(s)\n" +
		"  never made: #4 book(args {\"hotel_id\":\"h1\",\"nights\":3}) in trace " + captured + "\n"
	if !strings.Contains(out.String(), wantReport) {
		t.Errorf("no report at exit:\n%s", out.String())
	}
}

func TestReplayServeRefusesBadFixture(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`{"format":"tally.replay/v9"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err := runCLI(context.Background(), &out, "replay", "serve", bad, "--addr", "127.0.0.1:0")
	if err == nil || !strings.Contains(err.Error(), `unsupported format "tally.replay/v9"`) {
		t.Errorf("error %v, want the unsupported format named", err)
	}
}

// TestReplayExportRefusesServerTraceIDs: trace ids the server answers are
// checked like ids given as arguments, so a (compromised or fake) server
// cannot make the export write outside -o DIR.
func TestReplayExportRefusesServerTraceIDs(t *testing.T) {
	fixture, err := os.ReadFile("../../api/testdata/trip_fixture.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, id string }{
		{"parent directories", "../../../../escaped"},
		{"absolute path", "/tmp/escaped"},
		{"not hex", strings.Repeat("zz", 16)},
		{"too short", "abc"},
	} {
		t.Run(c.name, func(t *testing.T) {
			fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				if r.URL.Path == "/api/v1/runs" {
					fmt.Fprintf(w, `{"runs":[{"trace_id":%q}]}`, c.id)
					return
				}
				w.Write(fixture) //nolint:errcheck // the test sees a short write
			}))
			defer fake.Close()
			root := t.TempDir()
			dir := filepath.Join(root, "a", "b", "c", "out")
			var out bytes.Buffer
			err := runCLI(context.Background(), &out, "replay", "export", "--server", fake.URL,
				"--conversation", "conv-1", "-o", dir)
			if err == nil || !strings.Contains(err.Error(), "want 32 hex characters") {
				t.Errorf("export of server id %q: %v, want a refusal", c.id, err)
			}
			var written []string
			filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error { //nolint:errcheck // best effort listing
				if err == nil && !d.IsDir() {
					written = append(written, path)
				}
				return nil
			})
			if len(written) != 0 {
				t.Errorf("export of server id %q wrote %v", c.id, written)
			}
			if _, err := os.Stat("/tmp/escaped.fixture.json"); err == nil && c.id == "/tmp/escaped" {
				os.Remove("/tmp/escaped.fixture.json")
				t.Errorf("export of server id %q wrote /tmp/escaped.fixture.json", c.id)
			}
		})
	}
}

// TestReplayServeFaults: `tally replay serve --fault` answers the first
// search with a 429 (Retry-After 2) and the retry with the recording; the
// exit report names the fault. A bad --fault is refused before serving.
func TestReplayServeFaults(t *testing.T) {
	fixtureFile := filepath.Join("..", "..", "api", "testdata", "trip_fixture.json")
	ctx, cancel := context.WithCancel(context.Background())
	addr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	out := &lineWriter{first: make(chan string, 1)}
	done := make(chan error, 1)
	go func() {
		done <- runCLI(ctx, out, "replay", "serve", fixtureFile, "--addr", addr, "--fault", "tool=search:rate_limit,retry_after_seconds=2")
	}()
	select {
	case <-out.first:
	case err := <-done:
		cancel()
		t.Fatalf("serve ended: %v\n%s", err, out.String())
	}
	req := `{"tool":"search","arguments":{"limit":10,"q":"hotels in Lisbon"}}`
	resp, err := http.Post("http://"+addr+"/call", "application/json", strings.NewReader(req))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "2" {
		t.Errorf("first search: %d Retry-After %q, want 429 and 2", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if status, body := post(t, "http://"+addr, req); status != 200 || string(body) != `{"result":{"hits":[{"id":"h1","name":"Casa Azul"}]}}` {
		t.Errorf("retry: %d %s", status, body)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serve: %v", err)
	}
	if !strings.Contains(out.String(), "injected rate_limit on call #1 search of ") {
		t.Errorf("exit report lacks the fault:\n%s", out.String())
	}
	var buf bytes.Buffer
	if err := runCLI(context.Background(), &buf, "replay", "serve", fixtureFile, "--addr", "127.0.0.1:0", "--fault", "seq=1:flood"); err == nil ||
		!strings.Contains(err.Error(), `fault kind "flood"`) {
		t.Errorf("bad --fault: %v", err)
	}
}
