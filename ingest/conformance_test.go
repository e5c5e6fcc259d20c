package ingest_test

import (
	"math"
	"testing"

	"github.com/tallyhq/tally/ingest"
	"github.com/tallyhq/tally/internal/conformance"
	"github.com/tallyhq/tally/pricing"
	"github.com/tallyhq/tally/schema"
)

// minScenarios is how many corpus scenarios the issue asks for at least.
const minScenarios = 30

// TestConformanceSpans normalizes every scenario of the conformance corpus
// (testdata/conformance: runs as real instrumentations export them, with the
// provider's bill worked out by hand) and checks each span's stored usage
// buckets and cost source. The run totals, which need the counting rule of
// the readers, are checked in package query.
func TestConformanceSpans(t *testing.T) {
	scenarios, err := conformance.Load("testdata/conformance")
	if err != nil {
		t.Fatal(err)
	}
	if len(scenarios) < minScenarios {
		t.Errorf("the corpus has %d scenarios, want at least %d", len(scenarios), minScenarios)
	}
	catalog, err := pricing.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range scenarios {
		t.Run(sc.Name, func(t *testing.T) {
			td, err := sc.Traces()
			if err != nil {
				t.Fatal(err)
			}
			batch, rej := ingest.Normalize(td, ingest.Options{Project: "conformance", Pricer: catalog})
			if rej.Spans != 0 {
				t.Fatalf("%d spans rejected: %s", rej.Spans, rej.Message)
			}
			byID := map[string]*schema.Span{}
			for i := range batch.Spans {
				byID[batch.Spans[i].SpanID] = &batch.Spans[i]
			}
			for local, want := range sc.Expect.Spans {
				s := byID[sc.SpanID(local)]
				if s == nil {
					t.Fatalf("span %s was not stored", local)
				}
				checkBucket(t, local, "input", s.InputTokens, want.Input)
				checkBucket(t, local, "cache_read", s.CacheReadTokens, want.CacheRead)
				checkBucket(t, local, "cache_write", s.CacheWriteTokens, want.CacheWrite)
				checkBucket(t, local, "output", s.OutputTokens, want.Output)
				checkBucket(t, local, "reasoning", s.ReasoningTokens, want.Reasoning)
				if want.CostSource != nil && s.CostSource != *want.CostSource {
					t.Errorf("span %s: cost source %q, want %q (%s)", local, s.CostSource, *want.CostSource, explain(s, catalog))
				}
				if want.CostConfidence != nil && s.CostConfidence != *want.CostConfidence {
					t.Errorf("span %s: cost confidence %q, want %q (%s)", local, s.CostConfidence, *want.CostConfidence, explain(s, catalog))
				}
				if want.CostUSD != nil && math.Abs(s.CostTotal-*want.CostUSD) > 1e-9 {
					t.Errorf("span %s: cost %.9f USD, want %.9f (%s)", local, s.CostTotal, *want.CostUSD, explain(s, catalog))
				}
				if t.Failed() {
					t.Logf("span %s: %s", local, explain(s, catalog))
				}
			}
		})
	}
}

func checkBucket(t *testing.T, span, bucket string, got uint64, want *uint64) {
	t.Helper()
	if want != nil && got != *want {
		t.Errorf("span %s: %s tokens %d, want %d", span, bucket, got, *want)
	}
}

// explain renders how tally derived a span's numbers, for failure messages.
func explain(s *schema.Span, catalog *pricing.Catalog) string {
	ex := ingest.Explain(*s, ingest.Options{Pricer: catalog})
	out := "reading " + ex.Reading + ":"
	for _, st := range ex.Steps {
		out += " " + st + ";"
	}
	return out
}
