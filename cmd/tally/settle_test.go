package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/tallyhq/tally/internal/testenv"
)

// TestMigrateSettlesStoredRuns is the run table's backfill: runs stored by
// a tally that did not settle them (--settle-runner off, as a build before
// the run table) are settled by tally migrate, which says how many, and
// are then read from the run table; a second migrate has nothing left to
// do. On the embedded store tally is stopped for migrate (one process owns
// the store), and on the server too, for the same steps.
func TestMigrateSettlesStoredRuns(t *testing.T) {
	bin := buildTally(t)
	dataDir := filepath.Join(t.TempDir(), "data")
	store := []string{"--store", "embedded"}
	if testenv.StoreKind(t) == testenv.StoreClickHouse {
		ch := testenv.ClickHouse(t)
		store = serverStore(ch.Addr, ch.NewDatabase(t))
	}
	p := startTallyProc(t, bin, append(store, "--settle-runner", "off"), dataDir)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var out bytes.Buffer
	if err := runCLI(ctx, &out, "demo", "--endpoint", p.url, "--runs", "12", "--seed", "3",
		"--end", time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)); err != nil {
		t.Fatalf("tally demo: %v\n%s", err, out.String())
	}
	p.waitDelivered()
	runs := listRuns(t, p.url)
	if len(runs) != 12 {
		t.Fatalf("%d runs listed before migrate, want the 12 sent", len(runs))
	}
	for _, r := range runs {
		if r.Settled {
			t.Fatalf("run %s settled with --settle-runner off", r.TraceID)
		}
	}
	p.stop()

	migrate := func() int {
		t.Helper()
		args := append([]string{"migrate", "--config", "", "--data-dir", dataDir, "--settle-quiet", "1ms", "--settle-margin", "1ms"}, store...)
		out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("tally migrate: %v\n%s", err, out)
		}
		m := regexp.MustCompile(`runs settled: (\d+) \((\d+) in flight`).FindSubmatch(out)
		if m == nil {
			t.Fatalf("tally migrate did not say how many runs it settled:\n%s", out)
		}
		n, _ := strconv.Atoi(string(m[1]))
		return n
	}
	if n := migrate(); n != 12 {
		t.Fatalf("tally migrate settled %d runs, want 12", n)
	}
	if n := migrate(); n != 0 {
		t.Errorf("a second tally migrate settled %d runs, want 0: the first settled them all", n)
	}
	p.start()
	after := listRuns(t, p.url)
	if len(after) != 12 {
		t.Fatalf("%d runs listed after migrate, want 12", len(after))
	}
	for i, r := range after {
		if !r.Settled {
			t.Errorf("run %s not read from the run table after migrate", r.TraceID)
		}
		b := runs[i]
		if r.TraceID != b.TraceID || r.Spans != b.Spans || r.LLMCalls != b.LLMCalls || r.ToolCalls != b.ToolCalls ||
			r.Status != b.Status || !reflect.DeepEqual(r.Usage, b.Usage) {
			t.Errorf("run %d: settled %+v, live %+v", i, r, b)
		}
	}
}

// listedRun is what TestMigrateSettlesStoredRuns reads of a listed run.
type listedRun struct {
	TraceID   string         `json:"trace_id"`
	Settled   bool           `json:"settled"`
	Spans     int            `json:"spans"`
	LLMCalls  int            `json:"llm_calls"`
	ToolCalls int            `json:"tool_calls"`
	Status    string         `json:"status"`
	Usage     map[string]any `json:"usage"`
}

// listRuns lists the runs of the last day, newest first.
func listRuns(t *testing.T, url string) []listedRun {
	t.Helper()
	resp, err := http.Get(url + "/api/v1/runs?since=24h&limit=200")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/v1/runs: %s", resp.Status)
	}
	var page struct {
		Runs []listedRun `json:"runs"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&page); err != nil {
		t.Fatal(err)
	}
	return page.Runs
}
