package main

// End-to-end tests of tally serve on the embedded store, as `make run` runs
// it: the real binary as a subprocess, chDB in-process under --data-dir.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	dto "github.com/prometheus/client_model/go"
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

// families reads tally's /metrics, parsed with Prometheus's own text
// parser.
func (p *tallyProc) families() (map[string]*dto.MetricFamily, error) {
	resp, err := http.Get(p.url + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	return parser.TextToMetricFamilies(resp.Body)
}

// metric reads one unlabelled gauge or counter from tally's /metrics.
func (p *tallyProc) metric(name string) (float64, error) {
	families, err := p.families()
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

// series reads the gauge name's series from /metrics, by the value of
// their one label.
func (p *tallyProc) series(name string) (map[string]float64, error) {
	families, err := p.families()
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	if mf := families[name]; mf != nil {
		for _, m := range mf.GetMetric() {
			if l := m.GetLabel(); len(l) == 1 && m.Gauge != nil {
				out[l[0].GetValue()] = m.Gauge.GetValue()
			}
		}
	}
	return out, nil
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
	// The default --memory-budget, 512 MiB.
	if limit, err := p.metric("tally_store_engine_memory_limit_bytes"); err != nil || limit != 512<<20 {
		t.Errorf("tally_store_engine_memory_limit_bytes = %v, %v; want the default --memory-budget, 512 MiB", limit, err)
	}
	// And what its caches hold, each within its share of the budget.
	caches, err := p.series("tally_store_engine_cache_bytes")
	if err != nil {
		t.Fatal(err)
	}
	for cache, share := range map[string]float64{"mark": 64 << 20, "primary_index": 16 << 20, "text_index_postings": 16 << 20, "query_condition": 8 << 20} {
		if v, ok := caches[cache]; !ok || v < 0 || v > share {
			t.Errorf("tally_store_engine_cache_bytes{cache=%q} = %v (present %v), want a figure within its share, %v bytes", cache, v, ok, share)
		}
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

// TestEmbeddedStoreDamagedPartReported is issue #41's fourth defect: a
// part file truncated while tally was stopped made the engine set the
// whole part aside at start (detached/broken-on-start_…) and tally said
// nothing: /readyz ready, runs answering 404. Now the part is named in the
// log, in /readyz under degraded (still 200: the rest is served), in
// tally_store_detached_parts and in GET /api/v1/storage.
func TestEmbeddedStoreDamagedPartReported(t *testing.T) {
	bin := buildTally(t)
	dataDir := filepath.Join(t.TempDir(), "data")
	p := startTallyProc(t, bin, []string{"--store", "embedded"}, dataDir)
	sendThree(t, p)
	if v, err := p.metric("tally_store_detached_parts"); err != nil || v != 0 {
		t.Fatalf("tally_store_detached_parts before any damage: %v %v, want 0", v, err)
	}
	p.stop()

	// Truncate a data file of one active part of the spans table.
	victim := spansDataFile(t, dataDir)
	fi, err := os.Stat(victim)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(victim, fi.Size()/2); err != nil {
		t.Fatal(err)
	}

	p.start()
	var ready struct {
		Ready    bool              `json:"ready"`
		Degraded map[string]string `json:"degraded"`
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(p.url + "/readyz")
		if err == nil {
			json.NewDecoder(resp.Body).Decode(&ready) //nolint:errcheck // checked below
			resp.Body.Close()
		}
		if ready.Degraded["store_parts"] != "" || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !strings.Contains(ready.Degraded["store_parts"], "1 part set aside") || !strings.Contains(ready.Degraded["store_parts"], "spans/") {
		log, _ := os.ReadFile(p.logPath)
		t.Fatalf("/readyz degraded %v, want the spans part named\n%s", ready.Degraded, log)
	}
	if v, err := p.metric("tally_store_detached_parts"); err != nil || v != 1 {
		t.Errorf("tally_store_detached_parts %v %v, want 1", v, err)
	}
	log, _ := os.ReadFile(p.logPath)
	if !bytes.Contains(log, []byte("a part was set aside by the engine")) || !bytes.Contains(log, []byte("table=spans")) {
		t.Errorf("tally's log does not name the part set aside:\n%s", log)
	}
	resp, err := http.Get(p.url + "/api/v1/storage")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var rep struct {
		DetachedParts []schema.DetachedPart `json:"detached_parts"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&rep); err != nil || len(rep.DetachedParts) != 1 || rep.DetachedParts[0].Table != "spans" {
		t.Errorf("/api/v1/storage detached parts %+v, %v; want the spans part", rep.DetachedParts, err)
	}
}

// sendThree sends fault requests 0–2 and waits until they are stored.
func sendThree(t *testing.T, p *tallyProc) {
	t.Helper()
	now := time.Now()
	for n := range 3 {
		resp, err := http.Post(p.url+"/v1/traces", "application/x-protobuf", bytes.NewReader(faultRequest(n, now)))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("request %d: %s", n, resp.Status)
		}
	}
	p.waitDelivered()
}

// spansDataFile is the data file of an active part of the embedded
// store's spans table under dataDir (tally stopped).
func spansDataFile(t *testing.T, dataDir string) string {
	t.Helper()
	var victim string
	root := filepath.Join(dataDir, "store")
	filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error { //nolint:errcheck // a walk error leaves victim empty
		if err != nil || victim != "" || d.IsDir() {
			return nil
		}
		dir := filepath.Dir(path)
		if strings.HasPrefix(d.Name(), "data.") && strings.HasSuffix(d.Name(), ".bin") && !strings.Contains(dir, "detached") &&
			strings.Contains(dir, string(filepath.Separator)+"store"+string(filepath.Separator)) {
			if cols, err := os.ReadFile(filepath.Join(dir, "columns.txt")); err == nil && bytes.Contains(cols, []byte("`attr_keys`")) {
				victim = path
			}
		}
		return nil
	})
	if victim == "" {
		t.Fatalf("no data file of a spans part under %s", root)
	}
	return victim
}

// TestEmbeddedStoreChecksumErrorNamed: bytes of a part flipped while tally
// was stopped (sizes intact, so the engine loads the part) fail the reads
// that touch it with ClickHouse's checksum error; the API says the store
// has a damaged part instead of "internal error" (issue #41, item 4).
func TestEmbeddedStoreChecksumErrorNamed(t *testing.T) {
	bin := buildTally(t)
	dataDir := filepath.Join(t.TempDir(), "data")
	p := startTallyProc(t, bin, []string{"--store", "embedded"}, dataDir)
	sendThree(t, p)
	p.stop()
	victim := spansDataFile(t, dataDir)
	b, err := os.ReadFile(victim)
	if err != nil {
		t.Fatal(err)
	}
	for i := len(b) / 4; i < len(b)*3/4; i += 7 {
		b[i] ^= 0x5a
	}
	if err := os.WriteFile(victim, b, 0o644); err != nil {
		t.Fatal(err)
	}
	p.start()
	resp, err := http.Get(p.url + "/api/v1/runs?since=2h")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusInternalServerError || !bytes.Contains(body, []byte("the store has a damaged part")) {
		log, _ := os.ReadFile(p.logPath)
		t.Fatalf("runs over the damaged part: %d %s, want 500 naming a damaged part\n%s", resp.StatusCode, body, log)
	}
}

// TestEmbeddedStorePartitionLimitSetting is issue #41's first defect with
// the engine's max_partitions_per_insert_block set low (7, through
// --embedded-setting): one request of 20 spans on 20 days is stored whole,
// in INSERTs of at most 7 days, and nothing is dead-lettered.
func TestEmbeddedStorePartitionLimitSetting(t *testing.T) {
	bin := buildTally(t)
	dataDir := filepath.Join(t.TempDir(), "data")
	p := startTallyProc(t, bin, []string{"--store", "embedded", "--embedded-setting", "max_partitions_per_insert_block=7"}, dataDir)
	first := time.Now().UTC().AddDate(0, 0, -(faultSpansPerRequest - 1))
	resp, err := http.Post(p.url+"/v1/traces", "application/x-protobuf", bytes.NewReader(faultRequestStep(0, first, 24*time.Hour)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("request over %d days: %s", faultSpansPerRequest, resp.Status)
	}
	p.waitDelivered()
	if v, err := p.metric("tally_wal_dead_lettered_total"); err != nil || v != 0 {
		t.Errorf("dead-lettered %v %v, want 0", v, err)
	}
	p.stop()
	c := countEmbedded(t, dataDir)
	if n := c.Traces[traceHex(0)]; n != faultSpansPerRequest {
		log, _ := os.ReadFile(p.logPath)
		t.Fatalf("%d of the %d spans over %d days stored\n%s", n, faultSpansPerRequest, faultSpansPerRequest, log)
	}
}
