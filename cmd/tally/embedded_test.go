package main

// End-to-end tests of tally serve on the embedded store, as `make run` runs
// it: the real binary as a subprocess, chDB in-process under --data-dir.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/tallyhq/tally/internal/testenv"
	"github.com/tallyhq/tally/schema"
	"github.com/tallyhq/tally/schema/chdb"
)

// countEmbeddedEnv, set to a tally data directory, makes the test binary a
// helper that prints the storedCounts of the embedded store there as JSON
// and exits. The counting runs in its own process because chDB keeps one
// data path per process, and the test binary may have its own engine open.
const countEmbeddedEnv = "TALLY_TEST_COUNT_EMBEDDED"

// countEmbeddedMain is the helper's main.
func countEmbeddedMain(dataDir string) int {
	ctx := context.Background()
	engine, err := chdb.Open(ctx, chdb.Config{Path: filepath.Join(dataDir, "store"), Settings: schema.EmbeddedSettings()})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer engine.Close()
	conn, err := clickhouse.Open(&clickhouse.Options{Protocol: clickhouse.HTTP, Addr: []string{"embedded"},
		TransportFunc: func(*http.Transport) (http.RoundTripper, error) { return engine.Transport(), nil }})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer conn.Close()
	counts, err := countStored(ctx, conn, "tally.spans")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := json.NewEncoder(os.Stdout).Encode(counts); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// countEmbedded runs the helper on dataDir (no tally may have it open).
func countEmbedded(t *testing.T, dataDir string) storedCounts {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), countEmbeddedEnv+"="+dataDir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("count the embedded store: %v\n%s", err, stderr.String())
	}
	var c storedCounts
	if err := json.Unmarshal(out, &c); err != nil {
		t.Fatalf("count the embedded store: %v in %q", err, out)
	}
	return c
}

// stop sends SIGTERM and waits for the process to exit.
func (p *tallyProc) stop() {
	p.t.Helper()
	if p.cmd == nil || p.cmd.Process == nil {
		return
	}
	p.cmd.Process.Signal(syscall.SIGTERM) //nolint:errcheck // may have exited already
	deadline := time.Now().Add(30 * time.Second)
	for syscall.Kill(p.cmd.Process.Pid, 0) == nil {
		if time.Now().After(deadline) {
			p.t.Fatalf("tally did not exit 30 s after SIGTERM")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// metric reads one unlabelled gauge or counter from tally's /metrics
// (parsed with Prometheus's own text parser).
func (p *tallyProc) metric(name string) (float64, error) {
	resp, err := http.Get(p.url + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return 0, err
	}
	if mf := families[name]; mf != nil && len(mf.GetMetric()) == 1 {
		if m := mf.GetMetric()[0]; m.Gauge != nil {
			return m.Gauge.GetValue(), nil
		} else if m.Counter != nil {
			return m.Counter.GetValue(), nil
		}
	}
	return 0, fmt.Errorf("no single gauge or counter %s in /metrics", name)
}

// waitDelivered waits until tally has nothing acknowledged left to insert:
// the durable log delivered and the writer's queue empty.
func (p *tallyProc) waitDelivered() {
	p.t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		pending, err1 := p.metric("tally_wal_pending_records")
		queued, err2 := p.metric("tally_writer_queued_rows")
		if err1 == nil && err2 == nil && pending == 0 && queued == 0 {
			return
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("tally has not delivered what it acknowledged after 90 s (pending records %v %v, queued rows %v %v)", pending, err1, queued, err2)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Acknowledged means durable on the embedded store too: tally is SIGKILLed
// twice under load, engine and all, and every acknowledged span is stored
// exactly once after it comes back.
func TestEmbeddedStoreKilledUnderLoad(t *testing.T) {
	bin := buildTally(t)
	dataDir := filepath.Join(t.TempDir(), "data")
	p := startTallyProc(t, bin, []string{"--store", "embedded"}, dataDir)
	acked := loadWithKills(t, p) // the engine dies with tally each time
	if len(acked) < 10 {
		t.Fatalf("only %d requests acknowledged: the load did not run", len(acked))
	}
	p.waitDelivered()
	p.stop()
	verifyStored(t, acked, countEmbedded(t, dataDir))
}

// Without the library tally serve says how to get it and exits, and a bad
// engine setting is an error naming it: no panic.
func TestEmbeddedStoreStartupErrors(t *testing.T) {
	bin := buildTally(t)
	lib, err := chdb.FindLibrary("")
	if err != nil {
		t.Fatalf("this test needs the engine library: %v", err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"flag names a missing file", []string{"--chdb-lib", "/nonexistent/libchdb.so"},
			[]string{"chdb library /nonexistent/libchdb.so", "no such file"}},
		{"nowhere to be found", nil,
			[]string{"libchdb.so not found", "make deps", chdb.PinnedPackage, "--chdb-lib"}},
		{"setting without a value", []string{"--chdb-lib", lib, "--embedded-setting", "max_threads"},
			[]string{`--embedded-setting "max_threads": want NAME=VALUE`}},
		{"setting the engine refuses", []string{"--chdb-lib", lib, "--embedded-setting", "max_threads=lots"},
			[]string{"connect to", "max_threads=lots"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"serve", "--config", "", "--store", "embedded", "--data-dir", filepath.Join(t.TempDir(), "data"),
				"--listen", fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))}, tc.args...)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, args...)
			cmd.Dir = t.TempDir() // no .tally/lib above it, nor next to the binary
			cmd.Env = append(os.Environ(), chdb.LibraryEnv+"=")
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("tally serve without the library exited 0:\n%s", out)
			}
			if ctx.Err() != nil {
				t.Fatalf("tally serve without the library did not exit in 30 s:\n%s", out)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			if strings.Contains(string(out), "panic") || strings.Contains(string(out), "goroutine ") {
				t.Errorf("tally panicked:\n%s", out)
			}
		})
	}
}

// The embedded store's data path belongs to one process: a second tally
// opening it while serve runs is refused with who has it, and serve goes on.
func TestEmbeddedStoreHasOneProcess(t *testing.T) {
	bin := buildTally(t)
	dataDir := filepath.Join(t.TempDir(), "data")
	p := startTallyProc(t, bin, []string{"--store", "embedded"}, dataDir)
	out, err := exec.Command(bin, "migrate", "--config", "", "--store", "embedded", "--data-dir", dataDir).CombinedOutput()
	if err == nil {
		t.Fatalf("tally migrate on a store tally serve has open exited 0:\n%s", out)
	}
	want := fmt.Sprintf("open in another process (PID: %d)", p.cmd.Process.Pid)
	if !strings.Contains(string(out), want) {
		t.Fatalf("tally migrate said:\n%s\nwant it to name the holder: %q", out, want)
	}
	// The engine's memory shows in /metrics: in use, and the default cap.
	if used, err := p.metric("tally_store_engine_memory_bytes"); err != nil || used <= 0 {
		t.Errorf("tally_store_engine_memory_bytes = %v, %v; want the engine's memory in use", used, err)
	}
	if limit, err := p.metric("tally_store_engine_memory_limit_bytes"); err != nil || limit != 1<<30 {
		t.Errorf("tally_store_engine_memory_limit_bytes = %v, %v; want the default --embedded-max-memory, 1 GiB", limit, err)
	}
	resp, err := http.Get(p.url + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("tally serve /readyz after the refused second opener: %s", resp.Status)
	}
}
