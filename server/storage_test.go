//go:build linux

package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/tallyhq/tally/internal/tallytest"
	"github.com/tallyhq/tally/retention"
	"github.com/tallyhq/tally/support/diskguard"
)

// oneSpan is an OTLP/HTTP protobuf request body with one span.
func oneSpan(t *testing.T) []byte {
	t.Helper()
	td := ptrace.NewTraces()
	s := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	s.SetName("s")
	s.SetTraceID([16]byte{1, 2, 3})
	s.SetSpanID([8]byte{4, 5, 6})
	now := time.Now()
	s.SetStartTimestamp(pcommon.NewTimestampFromTime(now.Add(-time.Second)))
	s.SetEndTimestamp(pcommon.NewTimestampFromTime(now))
	b, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestDiskFloorRefusesAndRecovers: a real file system, measured for real.
// The floor is set 48 MiB under the data directory's free space; a 96 MiB
// file then takes the disk under it: ingest and the API's writes
// answer 503 with Retry-After, /readyz and /readyz/ingest fail naming the
// disk, /api/v1/storage says so, and nothing is deleted. Removing the file
// brings the space back, and tally takes writes again by itself.
func TestDiskFloorRefusesAndRecovers(t *testing.T) {
	dir := t.TempDir()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	free := uint64(st.Bavail) * uint64(st.Bsize)
	// The floor sits 512 MiB under the free space and the ballast takes
	// 1 GiB: other tests writing to the same disk meanwhile (make test runs
	// two packages at once, the benchmark's smoke test among them) move
	// the free space by far less than the margins either way.
	if free < 2<<30 {
		t.Fatalf("the test needs 2 GiB free under %s (TMPDIR); it has %d bytes", dir, free)
	}
	guard := diskguard.New(diskguard.Config{Floor: diskguard.Floor{Bytes: free - 512<<20}, Paths: []string{dir},
		Interval: 50 * time.Millisecond, RetryAfter: 7 * time.Second})
	if err := guard.Check(context.Background()); err != nil {
		t.Fatalf("before the file: %v", err)
	}
	tally := tallytest.Start(t, func(o *tallytest.Config) {
		o.Server.WriteGuard = guard
		o.Server.Jobs = append(o.Server.Jobs, guard.Run)
		o.API.Storage = &retention.Storage{Guard: guard}
	})
	post := func() *http.Response {
		t.Helper()
		resp, err := http.Post(tally.URL+"/v1/traces", "application/x-protobuf", bytes.NewReader(oneSpan(t)))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	status := func(path string) (int, string) {
		resp, err := http.Get(tally.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if r := post(); r.StatusCode != http.StatusOK {
		t.Fatalf("before: %d", r.StatusCode)
	}
	// Take 1 GiB of the disk.
	big := filepath.Join(dir, "ballast")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Fallocate(int(f.Fd()), 0, 0, 1<<30); err != nil {
		f.Close()
		t.Fatalf("fallocate: %v", err)
	}
	f.Close()
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting until %s", what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitFor("the guard sees the disk low", func() bool { return guard.Err() != nil })
	r := post()
	if r.StatusCode != http.StatusServiceUnavailable || r.Header.Get("Retry-After") != "7" {
		t.Errorf("ingest under the floor: %d Retry-After %q, want 503 and 7", r.StatusCode, r.Header.Get("Retry-After"))
	}
	outcome := `{"name":"quality","passed":true}`
	resp, err := http.Post(tally.URL+"/api/v1/runs/01020300000000000000000000000000/outcomes", "application/json", strings.NewReader(outcome))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "7" {
		t.Errorf("outcome under the floor: %d, want 503", resp.StatusCode)
	}
	for _, path := range []string{"/readyz", "/readyz/ingest"} {
		if code, body := status(path); code != http.StatusServiceUnavailable || !strings.Contains(body, "free disk space below the floor") {
			t.Errorf("%s: %d %s", path, code, body)
		}
	}
	code, body := status("/api/v1/storage")
	var rep retention.StorageReport
	if code != http.StatusOK || json.Unmarshal([]byte(body), &rep) != nil || rep.Disk == nil || !rep.Disk.Low ||
		len(rep.Disk.Disks) != 1 || rep.Disk.Disks[0].Name != dir || !rep.Disk.Disks[0].Low {
		t.Errorf("storage: %d %s", code, body)
	}
	// Nothing was deleted: the span taken before is still there.
	var n uint64
	if err := tally.Store.Conn().QueryRow(context.Background(), "SELECT count() FROM "+tally.Store.Table("spans")).Scan(&n); err != nil || n != 1 {
		t.Errorf("spans stored: %d (%v), want 1", n, err)
	}
	// Space returns.
	if err := os.Remove(big); err != nil {
		t.Fatal(err)
	}
	waitFor("the guard sees the space back", func() bool { return guard.Err() == nil })
	if r := post(); r.StatusCode != http.StatusOK {
		t.Errorf("after: %d, want 200", r.StatusCode)
	}
	if code, body := status("/readyz"); code != http.StatusOK {
		t.Errorf("/readyz after: %d %s", code, body)
	}
}
