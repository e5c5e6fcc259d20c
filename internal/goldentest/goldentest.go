// Package goldentest is the shared harness of the tests that read the
// golden corpus (query/testdata/golden.json) through ClickHouse: a migrated
// store, the built-in catalog, the corpus as normalized span rows, and the
// corpus's expected costs worked out by hand. Package query's and package
// rollup's tests use it.
package goldentest

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
	"github.com/tallyhq/tally/query"
	"github.com/tallyhq/tally/schema"
)

// OpenStore returns a migrated store on a fresh database.
func OpenStore(t testing.TB) *schema.Store {
	t.Helper()
	s := testenv.OpenStore(t)
	return s
}

// Builtin is the built-in price catalog.
func Builtin(t testing.TB) *pricing.Catalog {
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

// LoadCorpus reads a corpus file and normalizes it for project, pricing
// with catalog.
func LoadCorpus(t testing.TB, path, project string, catalog *pricing.Catalog) []schema.Span {
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
			if s.Status == schema.StatusError {
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

// Insert writes spans with the given version, as one delivery.
func Insert(t testing.TB, store *schema.Store, spans []schema.Span, version uint64) {
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

// Near reports whether two USD amounts are equal up to float rounding.
func Near(a, b float64) bool { return math.Abs(a-b) <= 1e-12*math.Max(1, math.Abs(b)) }

// MustTime parses an RFC 3339 time.
func MustTime(t testing.TB, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// GroupWant is a cost report group's expected totals.
type GroupWant struct {
	Spans, LLM, ToolCalls, Retries, Errors uint64
	Input, CacheRead, CacheWrite, Output   uint64
	Cost, Tax                              float64
	Unpriced, Client                       uint64
}

// CheckGroups compares a report's groups with wants (exhaustive: no other group).
func CheckGroups(t *testing.T, label string, rep query.CostReport, wants map[string]GroupWant, exhaustive bool) {
	t.Helper()
	got := map[string]query.CostGroup{}
	for _, g := range rep.Groups {
		got[g.Key] = g
	}
	if exhaustive && len(got) != len(wants) {
		t.Errorf("%s: %d groups, want %d: %+v", label, len(got), len(wants), rep.Groups)
	}
	for key, w := range wants {
		g, ok := got[key]
		if !ok {
			t.Errorf("%s: no group %q", label, key)
			continue
		}
		ok = g.Spans == w.Spans && g.LLMCalls == w.LLM && g.ToolCalls == w.ToolCalls && g.ToolRetries == w.Retries &&
			g.ToolErrors == w.Errors && g.Usage.Input == w.Input && g.Usage.CacheRead == w.CacheRead &&
			g.Usage.CacheWrite == w.CacheWrite && g.Usage.Output == w.Output && Near(g.Cost.Total, w.Cost) &&
			Near(g.RetryTaxUSD, w.Tax) && g.UnpricedSpans == w.Unpriced && g.ClientCostSpans == w.Client
		if !ok {
			t.Errorf("%s %q:\n got %+v\nwant %+v", label, key, g.CostTotals, w)
		}
	}
}

// The golden corpus's costs, worked out by hand. Prices, USD per million tokens, from pricing/catalog.yaml:
//
//	gpt-4o             input 2.50, cache read 1.25, output 10.00
//	gpt-4o-mini        input 0.15, output 0.60
//	gpt-4.1            input 2.00, cache read 0.50, output 8.00
//	claude-sonnet-4-5  input 3.00, cache read 0.30, cache write 3.75, output 15.00;
//	                   above 200k input: input 6.00, output 22.50
//	claude-3-5-haiku   input 0.80, output 4.00 (Bedrock entry, same prices)
const (
	// OpenAI inclusive, dated model: 1200 input of which 1000 cache read, 300 output.
	// (200×2.50 + 1000×1.25 + 300×10)/1e6 = (500 + 1250 + 3000)/1e6
	CostGPT4o = 0.00475
	// Anthropic additive: input 100 without cache, cache read 2000, cache
	// write 500 (stored input 2600), output 400.
	// (100×3 + 2000×0.30 + 500×3.75 + 400×15)/1e6 = (300 + 600 + 1875 + 6000)/1e6
	CostClaudeAdditive = 0.008775
	// The solo run's only usage is its agent span (gpt-4o-mini): 500 in, 50 out.
	// (500×0.15 + 50×0.60)/1e6 = (75 + 30)/1e6
	CostSolo = 0.000105
	// Vercel ai.* usage, provider-prefixed model: 1000 in, 200 out.
	// (1000×0.15 + 200×0.60)/1e6 = (150 + 120)/1e6
	CostVercelMini = 0.00027
	// OpenInference llm.token_count.*: 5000 in of which 4000 cache read, 1000 out.
	// (1000×2 + 4000×0.50 + 1000×8)/1e6 = (2000 + 2000 + 8000)/1e6
	CostOpenInference = 0.012
	// Long-context tier: 250000 in (> 200000), 1000 out, all at tier prices.
	// (250000×6 + 1000×22.50)/1e6 = (1500000 + 22500)/1e6
	CostLongContext = 1.5225
	// Bedrock name of Claude 3.5 Haiku: 2000 in, 100 out.
	// (2000×0.80 + 100×4)/1e6 = (1600 + 400)/1e6
	CostBedrockHaiku = 0.002
	// Client-sent cost on an unknown model.
	CostClient = 0.0123
)
