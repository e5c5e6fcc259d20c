package query_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"math"
	"os"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/tallyhq/tally/ingest"
	"github.com/tallyhq/tally/internal/testenv"
	"github.com/tallyhq/tally/pricing"
	"github.com/tallyhq/tally/schema"
)

// openStore returns a migrated store on a fresh database.
func openStore(t testing.TB) *schema.Store {
	t.Helper()
	ch := testenv.ClickHouse(t)
	db := ch.NewDatabase(t)
	ctx := context.Background()
	s, err := schema.Open(ctx, schema.Config{Addr: ch.Addr, Database: db})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return s
}

func builtin(t testing.TB) *pricing.Catalog {
	t.Helper()
	c, err := pricing.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// corpus is the format of testdata/*.json: runs of spans with their
// attributes, turned into OTLP and normalized by package ingest, so the
// tests cover what real SDKs send.
type corpus struct {
	Runs []struct {
		TraceID  string         `json:"trace_id"`
		Resource map[string]any `json:"resource"`
		Spans    []struct {
			ID     string         `json:"id"`
			Parent string         `json:"parent"`
			Name   string         `json:"name"`
			Start  time.Time      `json:"start"`
			Ms     int64          `json:"ms"`
			Status string         `json:"status"`
			Attrs  map[string]any `json:"attrs"`
		} `json:"spans"`
	} `json:"runs"`
}

func putAttrs(m pcommon.Map, attrs map[string]any) {
	for k, v := range attrs {
		switch v := v.(type) {
		case string:
			m.PutStr(k, v)
		case float64:
			if v == math.Trunc(v) {
				m.PutInt(k, int64(v))
			} else {
				m.PutDouble(k, v)
			}
		case bool:
			m.PutBool(k, v)
		}
	}
}

// loadCorpus reads a corpus file and normalizes it for project, pricing
// with catalog.
func loadCorpus(t testing.TB, path, project string, catalog *pricing.Catalog) []schema.Span {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var c corpus
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	td := ptrace.NewTraces()
	for _, run := range c.Runs {
		rs := td.ResourceSpans().AppendEmpty()
		putAttrs(rs.Resource().Attributes(), run.Resource)
		ss := rs.ScopeSpans().AppendEmpty()
		ss.Scope().SetName("golden")
		for _, s := range run.Spans {
			sp := ss.Spans().AppendEmpty()
			sp.SetTraceID(pcommon.TraceID(mustHex16(t, run.TraceID)))
			sp.SetSpanID(pcommon.SpanID(mustHex8(t, s.ID)))
			if s.Parent != "" {
				sp.SetParentSpanID(pcommon.SpanID(mustHex8(t, s.Parent)))
			}
			sp.SetName(s.Name)
			sp.SetKind(ptrace.SpanKindInternal)
			sp.SetStartTimestamp(pcommon.NewTimestampFromTime(s.Start))
			sp.SetEndTimestamp(pcommon.NewTimestampFromTime(s.Start.Add(time.Duration(s.Ms) * time.Millisecond)))
			if s.Status == "error" {
				sp.Status().SetCode(ptrace.StatusCodeError)
			} else {
				sp.Status().SetCode(ptrace.StatusCodeOk)
			}
			putAttrs(sp.Attributes(), s.Attrs)
		}
	}
	batch, rej := ingest.Normalize(td, ingest.Options{Project: project, Pricer: catalog, Usage: ingest.DefaultUsagePolicy()})
	if rej.Spans != 0 {
		t.Fatalf("corpus %s: %d spans rejected: %s", path, rej.Spans, rej.Message)
	}
	return batch.Spans
}

func mustHex16(t testing.TB, s string) [16]byte {
	t.Helper()
	var out [16]byte
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != 16 {
		t.Fatalf("trace id %q", s)
	}
	copy(out[:], b)
	return out
}

func mustHex8(t testing.TB, s string) [8]byte {
	t.Helper()
	var out [8]byte
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != 8 {
		t.Fatalf("span id %q", s)
	}
	copy(out[:], b)
	return out
}

// insert writes spans with the given version, as one delivery.
func insert(t testing.TB, store *schema.Store, spans []schema.Span, version uint64) {
	t.Helper()
	rows := make([]schema.Span, len(spans))
	copy(rows, spans)
	for i := range rows {
		rows[i].Version = version
	}
	if err := store.InsertSpans(context.Background(), rows); err != nil {
		t.Fatal(err)
	}
}

// near reports whether two USD amounts are equal up to float rounding.
func near(a, b float64) bool { return math.Abs(a-b) <= 1e-12*math.Max(1, math.Abs(b)) }

func mustTime(t testing.TB, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
