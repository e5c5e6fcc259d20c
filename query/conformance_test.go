package query_test

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/tallyhq/tally/attribution"
	"github.com/tallyhq/tally/ingest"
	"github.com/tallyhq/tally/internal/conformance"
	"github.com/tallyhq/tally/query"
	"github.com/tallyhq/tally/schema"
)

// TestConformanceRuns stores every scenario of the usage conformance corpus
// (../ingest/testdata/conformance) in ClickHouse, one project each, and
// checks the run's tokens and cost — what the provider bills, worked out by
// hand in each file — through every reader that totals a run: the run list
// (SQL), the run detail (Go, with each span's counted flag) and cost
// attribution (Go, by agent).
func TestConformanceRuns(t *testing.T) {
	scenarios, err := conformance.Load("../ingest/testdata/conformance")
	if err != nil {
		t.Fatal(err)
	}
	store := openStore(t)
	catalog := builtin(t)
	var all []schema.Span
	for i, sc := range scenarios {
		td, err := sc.Traces()
		if err != nil {
			t.Fatalf("%s: %v", sc.Name, err)
		}
		batch, rej := ingest.Normalize(td, ingest.Options{Project: fmt.Sprintf("c%02d", i), Pricer: catalog})
		if rej.Spans != 0 {
			t.Fatalf("%s: %d spans rejected: %s", sc.Name, rej.Spans, rej.Message)
		}
		all = append(all, batch.Spans...)
	}
	insert(t, store, all, 1)
	r := query.NewReader(store)
	ctx := context.Background()
	since, until := conformance.Start.Add(-time.Hour), conformance.Start.Add(2*time.Hour)
	for i, sc := range scenarios {
		want := sc.Expect.Run
		project := fmt.Sprintf("c%02d", i)
		t.Run(sc.Name, func(t *testing.T) {
			page, err := r.Runs(ctx, query.RunFilter{Project: project, Since: since, Until: until})
			if err != nil {
				t.Fatal(err)
			}
			if len(page.Runs) != 1 {
				t.Fatalf("run list: %d runs, want 1", len(page.Runs))
			}
			detail, err := r.Run(ctx, project, sc.TraceID())
			if err != nil {
				t.Fatal(err)
			}
			if want != nil {
				for _, s := range []struct {
					reader string
					sum    query.RunSummary
				}{{"run list", page.Runs[0]}, {"run detail", detail.Summary}} {
					if want.UnpricedSpans != nil && s.sum.UnpricedSpans != *want.UnpricedSpans {
						t.Errorf("%s: %d unpriced spans, want %d", s.reader, s.sum.UnpricedSpans, *want.UnpricedSpans)
					}
					if want.UnreconciledSpans != nil && s.sum.UnreconciledSpans != *want.UnreconciledSpans {
						t.Errorf("%s: %d unreconciled spans, want %d", s.reader, s.sum.UnreconciledSpans, *want.UnreconciledSpans)
					}
					if want.LLMCalls != nil && s.sum.LLMCalls != *want.LLMCalls {
						t.Errorf("%s: %d LLM calls, want %d", s.reader, s.sum.LLMCalls, *want.LLMCalls)
					}
					if want.CostConfidence != nil && s.sum.CostConfidence != *want.CostConfidence {
						t.Errorf("%s: cost confidence %q (%+v), want %q", s.reader, s.sum.CostConfidence, s.sum.CostByConfidence, *want.CostConfidence)
					}
				}
				checkRunTotals(t, "run list", page.Runs[0].Usage, page.Runs[0].Cost.Total, want)
				checkRunTotals(t, "run detail", detail.Summary.Usage, detail.Summary.Cost.Total, want)
				rep, err := r.Costs(ctx, query.CostFilter{Project: project, By: query.ByAgent, Since: since, Until: until})
				if err != nil {
					t.Fatal(err)
				}
				checkRunTotals(t, "cost attribution", rep.Total.Usage, rep.Total.Cost.Total, want)
				if want.LLMCalls != nil && rep.Total.LLMCalls != uint64(*want.LLMCalls) {
					t.Errorf("cost attribution: %d LLM calls, want %d", rep.Total.LLMCalls, *want.LLMCalls)
				}
				if want.CostConfidence != nil {
					if got := rep.Total.ByConfidence.Level(rep.Total.Cost.Total, int(rep.Total.UnpricedSpans)); got != *want.CostConfidence {
						t.Errorf("cost attribution: cost confidence %q (%+v), want %q", got, rep.Total.ByConfidence, *want.CostConfidence)
					}
				}
			}
			counted := map[string]bool{}
			var walk func(ns []*query.SpanNode)
			walk = func(ns []*query.SpanNode) {
				for _, n := range ns {
					counted[n.SpanID] = n.Counted
					walk(n.Children)
				}
			}
			walk(detail.Roots)
			for local, w := range sc.Expect.Spans {
				if w.Counted == nil {
					continue
				}
				got, ok := counted[sc.SpanID(local)]
				if !ok {
					t.Errorf("span %s is not in the run tree", local)
				} else if got != *w.Counted {
					t.Errorf("span %s: counted %v, want %v", local, got, *w.Counted)
				}
			}
		})
	}
}

func checkRunTotals(t *testing.T, reader string, u attribution.Usage, cost float64, want *conformance.RunExpect) {
	t.Helper()
	got := [5]uint64{u.Input, u.CacheRead, u.CacheWrite, u.Output, u.Reasoning}
	exp := [5]uint64{want.Input, want.CacheRead, want.CacheWrite, want.Output, want.Reasoning}
	if got != exp {
		t.Errorf("%s: tokens (input, cache read, cache write, output, reasoning) %v, want %v", reader, got, exp)
	}
	if math.Abs(cost-want.CostUSD) > 1e-9 {
		t.Errorf("%s: cost %.9f USD, want %.9f", reader, cost, want.CostUSD)
	}
}

// TestPlaceholderCallIDsAreNotRetries: Google ADK sends gen_ai.tool.call.id
// "<not specified>" when the model gave no id (conformance scenario
// google-adk-gemini-tools-not-specified-call-id, two different tool calls).
// Before placeholders were dropped, retry rule 2 (same call id) made the
// second call a retry of the first.
func TestPlaceholderCallIDsAreNotRetries(t *testing.T) {
	scenarios, err := conformance.Load("../ingest/testdata/conformance")
	if err != nil {
		t.Fatal(err)
	}
	store := openStore(t)
	var sc *conformance.Scenario
	for i := range scenarios {
		if scenarios[i].Name == "google-adk-gemini-tools-not-specified-call-id" {
			sc = &scenarios[i]
		}
	}
	if sc == nil {
		t.Fatal("scenario google-adk-gemini-tools-not-specified-call-id missing")
	}
	td, err := sc.Traces()
	if err != nil {
		t.Fatal(err)
	}
	batch, _ := ingest.Normalize(td, ingest.Options{Project: "p", Pricer: builtin(t)})
	insert(t, store, batch.Spans, 1)
	detail, err := query.NewReader(store).Run(context.Background(), "p", sc.TraceID())
	if err != nil {
		t.Fatal(err)
	}
	if detail.Summary.ToolCalls != 2 || detail.Summary.ToolRetries == nil || *detail.Summary.ToolRetries != 0 {
		t.Errorf("tool calls %d, retries %v: want 2 calls, 0 retries", detail.Summary.ToolCalls, detail.Summary.ToolRetries)
	}
}
