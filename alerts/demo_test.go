package alerts_test

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"
	"google.golang.org/protobuf/proto"

	"github.com/tallyhq/tally/alerts"
	"github.com/tallyhq/tally/demo"
	"github.com/tallyhq/tally/ingest"
	"github.com/tallyhq/tally/pricing"
	"github.com/tallyhq/tally/query"
)

// The demo traffic, normalized by ingest, against the shipped default rules:
// the flaky fetch_url fires tool_retry_rate and the never-caching summarizer
// fires cache_read_zero (what `make run` must show).
func TestDemoTrafficFiresTheDefaultRules(t *testing.T) {
	ctx := context.Background()
	store := openStore(t)
	T0 := time.Date(2026, 11, 7, 8, 0, 0, 0, time.UTC)
	runs := demo.Generate(demo.Config{Runs: 150, Seed: 7, Start: T0})
	var end time.Time
	for _, r := range runs {
		if r.Root.End.After(end) {
			end = r.Root.End
		}
	}
	b, err := proto.Marshal(demo.ExportRequest(runs))
	if err != nil {
		t.Fatal(err)
	}
	td, err := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(b)
	if err != nil {
		t.Fatal(err)
	}
	catalog, err := pricing.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	batch, rej := ingest.Normalize(td, ingest.Options{Project: "p", Pricer: catalog, Usage: ingest.DefaultUsagePolicy()})
	if rej.Spans != 0 {
		t.Fatalf("%d demo spans rejected: %s", rej.Spans, rej.Message)
	}
	if err := store.InsertSpans(ctx, batch.Spans); err != nil {
		t.Fatal(err)
	}
	rules, err := alerts.LoadRules("../deploy/alerts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	reader := query.NewReader(store)
	now := end.Add(time.Second)
	ev, err := alerts.NewEvaluator(alerts.Config{Rules: rules, Source: reader, Now: func() time.Time { return now },
		Cache: alerts.CacheFromReports(query.NewCostReader(reader, catalog))})
	if err != nil {
		t.Fatal(err)
	}
	results, err := ev.Check(ctx, now.Sub(T0)+time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	firing := map[string]bool{}
	for _, r := range results {
		if r.Firing {
			firing[r.Rule+" "+alerts.SubjectString(r.Subject)] = true
			t.Logf("firing: %s", r.Summary)
		}
	}
	for _, want := range []string{
		"TallyToolRetryRateHigh tool=fetch_url",
		"TallyPromptCacheNeverHit agent=summarizer model=gpt-4o-mini-2024-07-18", // the response model
	} {
		if !firing[want] {
			t.Errorf("%s does not fire", want)
		}
	}
	for _, quiet := range []string{"TallyToolRetryRateHigh tool=vector_search", "TallyToolRetryRateHigh tool=code_sandbox"} {
		if firing[quiet] {
			t.Errorf("%s fires", quiet)
		}
	}
}
