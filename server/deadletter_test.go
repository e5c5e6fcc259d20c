package server_test

import (
	"context"
	"encoding/binary"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/tallyhq/tally/ingest/durable"
	"github.com/tallyhq/tally/internal/tallytest"
	"github.com/tallyhq/tally/schema"
	"github.com/tallyhq/tally/server"
)

// durableTally starts tally with its durable log streaming into the store
// (batch by batch on the embedded store) and a dead-letter directory.
func durableTally(t *testing.T, attempts int) *tallytest.Instance {
	t.Helper()
	dir := t.TempDir()
	cfg := durable.DefaultConfig()
	cfg.RetryMin, cfg.RetryMax = time.Millisecond, 20*time.Millisecond
	cfg.DeadLetterAttempts = attempts
	return tallytest.Start(t, func(o *tallytest.Config) {
		o.Durable = &tallytest.Durable{Dir: filepath.Join(dir, "wal"), Config: cfg, Stream: true,
			DeadLetterDir: filepath.Join(dir, "deadletter")}
	})
}

// spansOnDays is one OTLP request of one run of n spans of service, span i
// starting on day i after first.
func spansOnDays(service string, trace byte, first time.Time, n int) ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", service)
	ss := rs.ScopeSpans().AppendEmpty()
	for i := range n {
		sp := ss.Spans().AppendEmpty()
		sp.SetTraceID(pcommon.TraceID{15: trace, 0: 1})
		var id [8]byte
		binary.BigEndian.PutUint64(id[:], uint64(i+1))
		sp.SetSpanID(id)
		if i > 0 {
			sp.SetParentSpanID(pcommon.SpanID{7: 1})
		}
		start := first.AddDate(0, 0, i)
		sp.SetName("step")
		sp.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
		sp.SetEndTimestamp(pcommon.NewTimestampFromTime(start.Add(time.Second)))
	}
	return td
}

// storedSpans counts the spans of service in the store, duplicates collapsed.
func storedSpans(t *testing.T, s *schema.Store, service string) int {
	t.Helper()
	var n uint64
	if err := s.Conn().QueryRow(context.Background(), "SELECT count() FROM "+s.Table(schema.TableSpans)+" FINAL WHERE service = ?",
		service).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return int(n)
}

// getText GETs url and returns its body, failing the test unless 200.
func getText(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
	return string(b)
}

// waitFor polls cond until it holds; the deadline only guards a hang.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRequestAcrossManyDaysIsStored is issue #41's first defect end to
// end: one request of 101 spans on 101 days was acknowledged, then its
// INSERT failed for good ("Too many partitions", where the server's
// max_partitions_per_insert_block is 100, as the embedded engine's is)
// and every span acknowledged after it stayed in the log. Now both
// requests are stored and /readyz stays ready.
func TestRequestAcrossManyDaysIsStored(t *testing.T) {
	tally := durableTally(t, 3)
	first := time.Now().UTC().AddDate(0, 0, -101).Truncate(time.Hour)
	tallytest.PostTraces(t, tally.URL, spansOnDays("many-days", 1, first, 101))
	tallytest.PostTraces(t, tally.URL, spansOnDays("after", 2, time.Now().UTC().Add(-time.Minute), 1))
	waitFor(t, "both requests stored", func() bool {
		return storedSpans(t, tally.Store, "many-days") == 101 && storedSpans(t, tally.Store, "after") == 1
	})
	var dl server.DeadLetterList
	if code := getJSON(t, tally.URL+"/api/v1/deadletter", &dl); code != http.StatusOK || len(dl.Entries) != 0 {
		t.Errorf("dead letters: %d %+v, want none", code, dl.Entries)
	}
	if code := getJSON(t, tally.URL+"/readyz", nil); code != http.StatusOK {
		t.Errorf("/readyz %d after the drain caught up", code)
	}
}

// TestUnstorableRecordIsDeadLettered: a record the server refuses for its
// rows (here a CHECK constraint on the spans table, so the refusal is the
// server's own) is dead-lettered after the configured refusals, the
// records acknowledged after it are stored, and once the cause is gone
// the entry is replayed through the API and stored too.
func TestUnstorableRecordIsDeadLettered(t *testing.T) {
	tally := durableTally(t, 2)
	if !tally.Store.Capabilities().LowCardinality { // 19.9+; constraints came in 19.14
		t.Skipf("ClickHouse %s has no CHECK constraints to refuse rows with; the embedded store's run (26.x) covers this", tally.Store.Capabilities().Version)
	}
	ctx := context.Background()
	if err := tally.Store.Conn().Exec(ctx, "ALTER TABLE "+tally.Store.Table(schema.TableSpans)+
		" ADD CONSTRAINT no_poison CHECK service != 'poison'"); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Add(-time.Minute)
	tallytest.PostTraces(t, tally.URL, spansOnDays("before", 1, now, 3))
	tallytest.PostTraces(t, tally.URL, spansOnDays("poison", 2, now, 4))
	tallytest.PostTraces(t, tally.URL, spansOnDays("after", 3, now, 5))
	var dl server.DeadLetterList
	waitFor(t, "the records around the poison stored and it dead-lettered", func() bool {
		return storedSpans(t, tally.Store, "before") == 3 && storedSpans(t, tally.Store, "after") == 5 &&
			getJSON(t, tally.URL+"/api/v1/deadletter", &dl) == http.StatusOK && len(dl.Entries) == 1
	})
	e := dl.Entries[0]
	if e.Spans != 4 || e.Attempts != 2 || len(e.Projects) != 1 || e.Projects[0] != "default" {
		t.Errorf("entry %+v, want 4 spans of project default after 2 refusals", e)
	}
	var detail server.DeadLetterDetail
	if code := getJSON(t, tally.URL+"/api/v1/deadletter/"+e.ID, &detail); code != http.StatusOK ||
		len(detail.Traces) != 1 || detail.Traces[0].Spans != 4 {
		t.Errorf("detail %d %+v, want one run of 4 spans", code, detail)
	}
	if storedSpans(t, tally.Store, "poison") != 0 {
		t.Fatal("the refused spans are in the store")
	}
	metrics := getText(t, tally.URL+"/metrics")
	for _, want := range []string{"\ntally_dead_letter_entries 1\n", "\ntally_wal_dead_lettered_total 1\n"} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q", strings.TrimSpace(want))
		}
	}
	if code := getJSON(t, tally.URL+"/readyz", nil); code != http.StatusOK {
		t.Errorf("/readyz %d once the drain moved past the dead letter", code)
	}

	// The cause fixed, the operator replays the entry.
	if err := tally.Store.Conn().Exec(ctx, "ALTER TABLE "+tally.Store.Table(schema.TableSpans)+" DROP CONSTRAINT no_poison"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(tally.URL+"/api/v1/deadletter/"+e.ID+"/replay", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("replay: %s", resp.Status)
	}
	waitFor(t, "the replayed spans stored", func() bool { return storedSpans(t, tally.Store, "poison") == 4 })
	if code := getJSON(t, tally.URL+"/api/v1/deadletter", &dl); code != http.StatusOK || len(dl.Entries) != 0 {
		t.Errorf("dead letters after the replay: %d %+v, want none", code, dl.Entries)
	}
	if code := getJSON(t, tally.URL+"/api/v1/deadletter/"+e.ID, nil); code != http.StatusNotFound {
		t.Errorf("the replayed entry: %d, want 404", code)
	}
}
