package main

// Fault tests of the acknowledged-means-durable guarantee, against the real
// tally binary run as a subprocess: ClickHouse stopped under load, tally
// SIGKILLed under load, and a torn tail in the durable log. Counts come from
// the sender's own record of which requests were acknowledged.

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/tallyhq/tally/internal/testenv"
)

const faultSpansPerRequest = 20

// buildTally builds the tally binary once per test into a temp dir.
func buildTally(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "tally")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// tallyProc is a `tally serve` subprocess.
type tallyProc struct {
	t       *testing.T
	bin     string
	args    []string
	url     string
	cmd     *exec.Cmd
	logPath string
}

// serverStore is the store flags for database db on the server at addr.
func serverStore(addr, db string) []string {
	return []string{"--store", "clickhouse", "--clickhouse-addr", addr, "--clickhouse-database", db}
}

func startTallyProc(t *testing.T, bin string, store []string, dataDir string) *tallyProc {
	t.Helper()
	port := testenv.FreePort(t)
	p := &tallyProc{t: t, bin: bin, url: fmt.Sprintf("http://127.0.0.1:%d", port),
		logPath: filepath.Join(dataDir, "..", filepath.Base(dataDir)+".log"),
		args: append(append([]string{"serve", "--config", "", "--listen", fmt.Sprintf("127.0.0.1:%d", port)}, store...),
			"--data-dir", dataDir, "--flush-interval", "20ms", "--disk-floor", "0", "--ack-timeout", "2s", "--log-level", "warn")}
	p.start()
	t.Cleanup(func() { p.kill() })
	return p
}

func (p *tallyProc) start() {
	p.t.Helper()
	logf, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		p.t.Fatal(err)
	}
	p.cmd = exec.Command(p.bin, p.args...)
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	go func() { p.cmd.Wait(); logf.Close() }() //nolint:errcheck // exit status is not interesting
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(p.url + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	log, _ := os.ReadFile(p.logPath)
	p.t.Fatalf("tally did not become healthy:\n%s", log)
}

// kill sends SIGKILL (a crash) to the process started last, if running.
func (p *tallyProc) kill() {
	if p.cmd != nil && p.cmd.Process != nil && p.cmd.ProcessState == nil {
		p.cmd.Process.Signal(syscall.SIGKILL) //nolint:errcheck // may have exited already
		for range 100 {
			if p.cmd.ProcessState != nil || syscall.Kill(p.cmd.Process.Pid, 0) != nil {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// faultRequest is request n: one trace (its id derived from n) of
// faultSpansPerRequest spans, so which spans were acknowledged is known from n.
func faultRequest(n int, now time.Time) []byte { return faultRequestStep(n, now, time.Millisecond) }

// faultRequestStep is faultRequest with span i starting i steps after now.
func faultRequestStep(n int, now time.Time, step time.Duration) []byte {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "fault")
	ss := rs.ScopeSpans().AppendEmpty()
	var tid [16]byte
	binary.BigEndian.PutUint64(tid[0:], 0xfa17)
	binary.BigEndian.PutUint64(tid[8:], uint64(n)+1)
	for i := range faultSpansPerRequest {
		s := ss.Spans().AppendEmpty()
		s.SetTraceID(pcommon.TraceID(tid))
		var sid [8]byte
		binary.BigEndian.PutUint64(sid[:], uint64(i)+1)
		s.SetSpanID(pcommon.SpanID(sid))
		if i > 0 {
			s.SetParentSpanID(pcommon.SpanID([8]byte{7: 1}))
		}
		s.SetName("execute_tool fetch_url")
		s.Attributes().PutStr("gen_ai.operation.name", "execute_tool")
		s.Attributes().PutStr("gen_ai.tool.name", "fetch_url")
		s.SetStartTimestamp(pcommon.NewTimestampFromTime(now.Add(time.Duration(i) * step)))
		s.SetEndTimestamp(pcommon.NewTimestampFromTime(now.Add(time.Duration(i)*step + time.Millisecond)))
	}
	b, err := ptraceotlp.NewExportRequestFromTraces(td).MarshalProto()
	if err != nil {
		panic(err)
	}
	return b
}

func traceHex(n int) string {
	var tid [16]byte
	binary.BigEndian.PutUint64(tid[0:], 0xfa17)
	binary.BigEndian.PutUint64(tid[8:], uint64(n)+1)
	return fmt.Sprintf("%x", tid)
}

// sender posts numbered requests like an OTLP exporter: a refused request
// (429/503/network error) is retried until acknowledged or the sender stops.
type sender struct {
	mu    sync.Mutex
	acked map[int]bool
	next  int
	url   func() string
}

func (s *sender) run(ctx context.Context, workers int) {
	var wg sync.WaitGroup
	now := time.Now().Add(-time.Minute)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				s.mu.Lock()
				n := s.next
				s.next++
				s.mu.Unlock()
				body := faultRequest(n, now)
				for ctx.Err() == nil {
					req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.url()+"/v1/traces", bytes.NewReader(body))
					req.Header.Set("Content-Type", "application/x-protobuf")
					resp, err := http.DefaultClient.Do(req)
					if err == nil {
						resp.Body.Close()
						if resp.StatusCode == http.StatusOK {
							s.mu.Lock()
							s.acked[n] = true
							s.mu.Unlock()
							break
						}
					}
					time.Sleep(50 * time.Millisecond)
				}
			}
		}()
	}
	wg.Wait()
}

// checkStored waits until every acknowledged trace has all its spans in
// ClickHouse, then checks that no span counts twice.
func checkStored(t *testing.T, ch *testenv.ClickHouseServer, db string, acked map[int]bool) {
	t.Helper()
	if len(acked) < 10 {
		t.Fatalf("only %d requests acknowledged: the load did not run", len(acked))
	}
	conn := ch.Conn(t, db)
	deadline := time.Now().Add(90 * time.Second)
	for {
		counts, err := countStored(context.Background(), conn, "spans")
		if err == nil && missingTraces(acked, counts.Traces) == 0 {
			verifyStored(t, acked, counts)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d acknowledged requests are not fully in ClickHouse (last error: %v)",
				missingTraces(acked, counts.Traces), len(acked), err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// storedCounts is what a store holds of the fault load.
type storedCounts struct {
	Traces          map[string]uint64 // spans per trace
	Total, Distinct uint64            // span rows and distinct span identities, deduplicated
}

// countStored reads storedCounts from table (qualified as the caller needs).
func countStored(ctx context.Context, conn driver.Conn, table string) (storedCounts, error) {
	c := storedCounts{Traces: map[string]uint64{}}
	rows, err := conn.Query(ctx, "SELECT trace_id, count() FROM "+table+" FINAL WHERE project = 'default' GROUP BY trace_id")
	if err != nil {
		return c, err
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var n uint64
		if err := rows.Scan(&id, &n); err != nil {
			return c, err
		}
		c.Traces[id] = n
	}
	if err := rows.Err(); err != nil {
		return c, err
	}
	err = conn.QueryRow(ctx, "SELECT count(), uniqExact(trace_id, span_id) FROM "+table+" FINAL").Scan(&c.Total, &c.Distinct)
	return c, err
}

func missingTraces(acked map[int]bool, stored map[string]uint64) int {
	missing := 0
	for n := range acked {
		if stored[traceHex(n)] != faultSpansPerRequest {
			missing++
		}
	}
	return missing
}

// verifyStored checks that every acknowledged trace is whole and no span
// counts twice (the deduplicated figures equal the distinct identities).
func verifyStored(t *testing.T, acked map[int]bool, c storedCounts) {
	t.Helper()
	if m := missingTraces(acked, c.Traces); m > 0 {
		t.Fatalf("%d of %d acknowledged requests are not fully stored", m, len(acked))
	}
	if c.Total != c.Distinct {
		t.Fatalf("%d span rows for %d distinct spans", c.Total, c.Distinct)
	}
	for id, n := range c.Traces {
		if n != faultSpansPerRequest {
			t.Errorf("trace %s has %d spans, want %d", id, n, faultSpansPerRequest)
		}
	}
	t.Logf("%d requests acknowledged (%d spans), %d traces stored", len(acked), len(acked)*faultSpansPerRequest, len(c.Traces))
}

func TestFaultClickHouseStoppedUnderLoad(t *testing.T) {
	bin := buildTally(t)
	ch := testenv.StartClickHouse(t)
	db := ch.NewDatabase(t)
	p := startTallyProc(t, bin, serverStore(ch.Addr, db), filepath.Join(t.TempDir(), "data"))
	s := &sender{acked: map[int]bool{}, url: func() string { return p.url }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.run(ctx, 2); close(done) }()
	time.Sleep(1500 * time.Millisecond)
	ch.Stop(t)
	s.mu.Lock()
	atStop := len(s.acked)
	s.mu.Unlock()
	time.Sleep(2 * time.Second)
	s.mu.Lock()
	duringOutage := len(s.acked) - atStop
	s.mu.Unlock()
	ch.Start(t)
	time.Sleep(1500 * time.Millisecond)
	cancel()
	<-done
	// With the durable log, tally keeps acknowledging while ClickHouse is down.
	if duringOutage == 0 {
		t.Errorf("no request acknowledged during the ClickHouse outage")
	}
	checkStored(t, ch, db, s.acked)
}

func TestFaultTallyKilledUnderLoad(t *testing.T) {
	bin := buildTally(t)
	ch := testenv.StartClickHouse(t)
	db := ch.NewDatabase(t)
	dataDir := filepath.Join(t.TempDir(), "data")
	p := startTallyProc(t, bin, serverStore(ch.Addr, db), dataDir)
	checkStored(t, ch, db, loadWithKills(t, p))
}

// loadWithKills sends load to p while SIGKILLing and restarting it twice
// (acknowledged spans may then be only in its durable log), and returns
// which requests were acknowledged.
func loadWithKills(t *testing.T, p *tallyProc) map[int]bool {
	t.Helper()
	s := &sender{acked: map[int]bool{}, url: func() string { return p.url }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.run(ctx, 2); close(done) }()
	for round := range 2 {
		time.Sleep(1500 * time.Millisecond)
		p.kill()
		p.start()
		t.Logf("round %d: restarted tally", round)
	}
	time.Sleep(1 * time.Second)
	cancel()
	<-done
	return s.acked
}

func TestFaultTornLogTail(t *testing.T) {
	bin := buildTally(t)
	ch := testenv.StartClickHouse(t)
	db := ch.NewDatabase(t)
	dataDir := filepath.Join(t.TempDir(), "data")
	p := startTallyProc(t, bin, serverStore(ch.Addr, db), dataDir)
	// ClickHouse down: acknowledged requests stay in the durable log.
	ch.Stop(t)
	s := &sender{acked: map[int]bool{}, url: func() string { return p.url }}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	s.run(ctx, 2)
	cancel()
	p.kill()
	// A crash in the middle of a write leaves a torn frame at the tail of
	// the last segment: half a length header and some garbage.
	segs, _ := filepath.Glob(filepath.Join(dataDir, "wal", "*.seg"))
	if len(segs) == 0 {
		t.Fatalf("no durable log segments in %s", dataDir)
	}
	last := segs[len(segs)-1]
	f, err := os.OpenFile(last, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte{0x40, 0x00, 0x00, 0x00, 0xde, 0xad, 0xbe}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	ch.Start(t)
	p.start()
	checkStored(t, ch, db, s.acked)
	log, _ := os.ReadFile(p.logPath)
	// 7 bytes appended above, all of them dropped.
	if !bytes.Contains(log, []byte("truncating torn tail")) || !bytes.Contains(log, []byte("bytes_dropped=7")) {
		t.Errorf("tally log does not report the 7-byte torn tail it truncated:\n%s", log)
	}
}

// TestFaultStartDuringClickHouseOutage: a tally restarted while ClickHouse
// is down listens at once (after a few seconds of retries, not 60 s and an
// exit), authenticates from its key cache, takes spans into its durable log
// (/readyz/ingest ready, /readyz not), and migrates and delivers them when
// ClickHouse is back — every acknowledged span stored once.
func TestFaultStartDuringClickHouseOutage(t *testing.T) {
	bin := buildTally(t)
	ch := testenv.StartClickHouse(t)
	db := ch.NewDatabase(t)
	dataDir := filepath.Join(t.TempDir(), "data")
	first := startTallyProc(t, bin, serverStore(ch.Addr, db), dataDir) // runs once: schema, key cache
	first.kill()
	ch.Stop(t)
	p := startTallyProc(t, bin, serverStore(ch.Addr, db), dataDir)
	status := func(path string) int {
		resp, err := http.Get(p.url + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := status("/readyz"); got != http.StatusServiceUnavailable {
		t.Errorf("/readyz during the outage: %d, want 503", got)
	}
	if got := status("/readyz/ingest"); got != http.StatusOK {
		t.Errorf("/readyz/ingest during the outage: %d, want 200 (the durable log takes spans)", got)
	}
	s := &sender{acked: map[int]bool{}, url: func() string { return p.url }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.run(ctx, 2); close(done) }()
	time.Sleep(2 * time.Second)
	s.mu.Lock()
	duringOutage := len(s.acked)
	s.mu.Unlock()
	ch.Start(t)
	time.Sleep(1500 * time.Millisecond)
	cancel()
	<-done
	if duringOutage == 0 {
		t.Errorf("no request acknowledged while ClickHouse was down")
	}
	checkStored(t, ch, db, s.acked)
	deadline := time.Now().Add(30 * time.Second)
	for status("/readyz") != http.StatusOK {
		if time.Now().After(deadline) {
			t.Fatal("/readyz never became ready after ClickHouse came back")
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestMetricsWithoutAlerting: with alerting off (no rules file) the tool
// figures are on /metrics all the same — they come from their own exporter,
// not from the alert evaluator.
func TestMetricsWithoutAlerting(t *testing.T) {
	bin := buildTally(t)
	ch := testenv.StartClickHouse(t)
	db := ch.NewDatabase(t)
	port := testenv.FreePort(t)
	dataDir := filepath.Join(t.TempDir(), "data")
	p := &tallyProc{t: t, bin: bin, url: fmt.Sprintf("http://127.0.0.1:%d", port),
		logPath: filepath.Join(dataDir, "..", "metrics.log"),
		args: []string{"serve", "--config", "", "--listen", fmt.Sprintf("127.0.0.1:%d", port),
			"--clickhouse-addr", ch.Addr, "--clickhouse-database", db, "--data-dir", dataDir,
			"--flush-interval", "20ms", "--disk-floor", "0", "--alerts-rules", "", "--alerts-interval", "200ms", "--log-level", "warn"}}
	p.start()
	t.Cleanup(func() { p.kill() })
	resp, err := http.Post(p.url+"/v1/traces", "application/x-protobuf", bytes.NewReader(faultRequest(1, time.Now().Add(-time.Minute))))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /v1/traces: %s", resp.Status)
	}
	// faultRequest sends faultSpansPerRequest fetch_url tool calls.
	want := fmt.Sprintf(`tally_tool_calls_total{project="default",tool="fetch_url"} %d`, faultSpansPerRequest)
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(p.url + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(body), want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("/metrics never showed %q with alerting off", want)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
