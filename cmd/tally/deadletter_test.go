package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tallyhq/tally/ingest"
	"github.com/tallyhq/tally/ingest/deadletter"
	"github.com/tallyhq/tally/ingest/durable"
	"github.com/tallyhq/tally/ingest/rowcodec"
	"github.com/tallyhq/tally/internal/tallytest"
	"github.com/tallyhq/tally/schema"
)

// TestDeadLetterCLI: `tally deadletter` lists, shows, replays and discards
// the entries of a running tally's dead-letter directory. The entries are
// written as the durable log writes them (a log record of 4 spans each);
// a replayed one is stored, a discarded one is gone.
func TestDeadLetterCLI(t *testing.T) {
	dir := t.TempDir()
	cfg := durable.DefaultConfig()
	cfg.RetryMin, cfg.RetryMax = time.Millisecond, 20*time.Millisecond
	tally := tallytest.Start(t, func(o *tallytest.Config) {
		o.Durable = &tallytest.Durable{Dir: filepath.Join(dir, "wal"), Config: cfg, Stream: true,
			DeadLetterDir: filepath.Join(dir, "deadletter")}
	})
	letters, err := deadletter.Open(filepath.Join(dir, "deadletter"))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now().UTC().Add(-time.Minute).Truncate(time.Second)
	put := func(seq uint64, trace string) deadletter.Entry {
		var b ingest.Batch
		for i := range 4 {
			b.Spans = append(b.Spans, schema.Span{Project: "default", TraceID: trace, SpanID: fmt.Sprintf("%016x", i+1),
				Start: start, StartNs: uint64(start.UnixNano()), EndNs: uint64(start.UnixNano()) + 1000, DurationNs: 1000,
				Name: "step", SpanType: schema.TypeTool, Service: "dead", Version: 1})
		}
		e, err := letters.Put(deadletter.Entry{Seq: seq, Error: "code: 469, message: Constraint violated", Attempts: 5,
			Spans: 4, Projects: []string{"default"}}, rowcodec.Encode(nil, b))
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	kept := put(7, strings.Repeat("a1", 16))
	dropped := put(9, strings.Repeat("b2", 16))
	cli := func(args ...string) string {
		t.Helper()
		out, err := tallyCLI(t, append(append([]string{"deadletter"}, args...), "--server", tally.URL, "--config", "")...)
		if err != nil {
			t.Fatalf("tally deadletter %v: %v\n%s", args, err, out)
		}
		return out
	}

	if out := cli("list"); !strings.Contains(out, kept.ID) || !strings.Contains(out, dropped.ID) ||
		!strings.Contains(out, "Constraint violated") || !strings.Contains(out, "2 entries") {
		t.Errorf("list:\n%s", out)
	}
	if out := cli("show", kept.ID); !strings.Contains(out, "record 7 of the durable log") ||
		!strings.Contains(out, "4 spans") || !strings.Contains(out, strings.Repeat("a1", 16)) {
		t.Errorf("show:\n%s", out)
	}
	if out := cli("replay", kept.ID); !strings.Contains(out, "Replayed "+kept.ID) {
		t.Errorf("replay:\n%s", out)
	}
	if out := cli("discard", dropped.ID); !strings.Contains(out, "Discarded "+dropped.ID) {
		t.Errorf("discard:\n%s", out)
	}
	if out := cli("list"); !strings.Contains(out, "No dead letters") {
		t.Errorf("list after replay and discard:\n%s", out)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		var n uint64
		if err := tally.Store.Conn().QueryRow(context.Background(), "SELECT count() FROM "+tally.Store.Table(schema.TableSpans)+
			" FINAL WHERE service = 'dead'").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of the replayed entry's 4 spans stored", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := tallyCLI(t, "deadletter", "show", dropped.ID, "--server", tally.URL, "--config", ""); err == nil ||
		!strings.Contains(err.Error(), "not found") {
		t.Errorf("show of a discarded entry: %v, want not found", err)
	}
}
