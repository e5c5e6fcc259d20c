package query_test

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/tallyhq/tally/internal/goldentest"
	"github.com/tallyhq/tally/query"
	"github.com/tallyhq/tally/schema"
)

// TestCostsOpenHourFromTheCache reads the golden corpus's 10:00 hour as the
// open hour (the reader's clock at 10:50, no rollup): its quiet runs are
// added up by minute once, the runs in flight read from their spans at
// every report, and every figure is the one worked out by hand for the
// corpus (goldenByAgent), as the uncached reader answers.
func TestCostsOpenHourFromTheCache(t *testing.T) {
	ctx := context.Background()
	store := openStore(t)
	spans := loadCorpus(t, "testdata/golden.json", "golden", builtin(t))
	insert(t, store, spans, 1) // accepted long ago: every run is quiet
	now := mustTime(t, "2026-01-10T10:50:00Z")
	clock := func() time.Time { return now }
	hour := mustTime(t, "2026-01-10T10:00:00Z")
	// The 10:00 hour: the planner's run at 10:05, the summarizer's at
	// 10:20, the researcher's at 10:30.
	inHour := map[string]goldentest.GroupWant{}
	for _, k := range []string{"planner", "summarizer", "researcher"} {
		inHour[k] = goldenByAgent[k]
	}
	cached := query.NewReader(store, query.WithOpenHourClock(clock))
	uncached := query.NewReader(store, query.WithEdgeHourSpans(0))
	report := func(label string, r *query.Reader, since, until time.Time, bucket string, want map[string]goldentest.GroupWant) {
		t.Helper()
		rep, err := r.Costs(ctx, query.CostFilter{Project: "golden", By: query.ByAgent, Since: since, Until: until, Bucket: bucket})
		if err != nil {
			t.Fatal(err)
		}
		goldentest.CheckGroups(t, label+", bucket "+bucket, rep, want, true)
	}
	stats := func(label string, r *query.Reader, want query.OpenHourStats) {
		t.Helper()
		if got := query.OpenHour(r); got != want {
			t.Errorf("%s: the open hour cache %+v, want %+v", label, got, want)
		}
	}
	for _, bucket := range []string{query.BucketNone, query.BucketHour, query.BucketMinute} {
		report("cached", cached, hour, now, bucket, inHour)
		report("uncached", uncached, hour, now, bucket, inHour)
	}
	// Built once, from the three quiet runs: 40 entries, as the edge hour
	// of the same hour adds up to (TestCostsEdgeHourFromTheCache); the
	// three reports answered from it.
	stats("three reports", cached, query.OpenHourStats{Builds: 1, Reads: 3, BaseRuns: 3, Entries: 40})

	// From 10:20:00.5 the summarizer's ai.generateText span (10:20:00) is
	// left out: its minute has base spans on both sides of the range's
	// start, so its spans are loaded (once) and kept with the hour. Its
	// usage repeats the doGenerate span's (10:20:01), which counts: the
	// summarizer keeps its call, tokens and cost, one span less.
	midMinute := map[string]goldentest.GroupWant{"summarizer": goldenByAgent["summarizer"], "researcher": goldenByAgent["researcher"]}
	s := midMinute["summarizer"]
	s.Spans--
	midMinute["summarizer"] = s
	from := mustTime(t, "2026-01-10T10:20:00.5Z")
	report("cached, from the middle of a minute", cached, from, now, query.BucketNone, midMinute)
	report("cached, from the middle of a minute again", cached, from, now, query.BucketNone, midMinute)
	report("uncached, from the middle of a minute", uncached, from, now, query.BucketNone, midMinute)
	stats("from the middle of a minute", cached, query.OpenHourStats{Builds: 1, Loads: 1, Reads: 5, BaseRuns: 3, Entries: 40})
	// From 10:05:00.5 to 10:20:00.5: the planner's agent span (10:05:00)
	// is left out, its minute loaded; its usage repeats its chats', which
	// count. Of the summarizer only its ai.generateText span, whose usage
	// and call are the doGenerate span's: one span, from the minute kept.
	planner := goldenByAgent["planner"]
	planner.Spans--
	between := map[string]goldentest.GroupWant{"planner": planner, "summarizer": {Spans: 1}}
	report("cached, between the middles of two minutes", cached, mustTime(t, "2026-01-10T10:05:00.5Z"), from, query.BucketNone, between)
	report("uncached, between the middles of two minutes", uncached, mustTime(t, "2026-01-10T10:05:00.5Z"), from, query.BucketNone, between)
	stats("between the middles of two minutes", cached, query.OpenHourStats{Builds: 1, Loads: 2, Reads: 6, BaseRuns: 3, Entries: 40})
	// From 10:04:30 to 10:20:00.5: no base span in the minute 10:04 (the
	// planner's start at 10:05), the summarizer's minute still kept: no
	// load.
	report("cached, from a minute without spans", cached, mustTime(t, "2026-01-10T10:04:30Z"), from, query.BucketNone,
		map[string]goldentest.GroupWant{"planner": goldenByAgent["planner"], "summarizer": {Spans: 1}})
	stats("from a minute without spans", cached, query.OpenHourStats{Builds: 1, Loads: 2, Reads: 7, BaseRuns: 3, Entries: 40})

	// A run in flight at 10:25, accepted five seconds ago (of agent
	// latecomer, with the usage and cost of the solo run's span): read
	// from its spans, the base kept.
	late := lateSpan(t, spans, "0000000000000501", "latecomer", mustTime(t, "2026-01-10T10:25:00Z"))
	insert(t, store, []schema.Span{late}, uint64(now.Add(-5*time.Second).UnixNano()))
	withLate := maps.Clone(inHour)
	withLate["latecomer"] = goldenByAgent["solo"]
	report("cached, with a run in flight", cached, hour, now, query.BucketNone, withLate)
	report("uncached, with a run in flight", uncached, hour, now, query.BucketNone, withLate)
	stats("with a run in flight", cached, query.OpenHourStats{Builds: 1, Loads: 2, Reads: 8, BaseRuns: 3, Entries: 40})

	// A reader that absorbs quiet runs outside its base from one row on:
	// at 10:50 the latecomer's run is in flight (read from its spans); a
	// minute later it is quiet, and the next report adds it to the base:
	// one entry more in each of the nine views (minute 10:25, where no
	// base run has spans), 49.
	absorbing := query.NewReader(store, query.WithOpenHourAbsorbRows(1), query.WithOpenHourClock(func() time.Time { return now }))
	report("absorbing, with a run in flight", absorbing, hour, now, query.BucketNone, withLate)
	stats("absorbing, with a run in flight", absorbing, query.OpenHourStats{Builds: 1, Reads: 1, BaseRuns: 3, Entries: 40})
	now = now.Add(time.Minute)
	report("absorbing, the run quiet", absorbing, hour, now, query.BucketNone, withLate)
	report("absorbing, the run quiet, again", absorbing, hour, now, query.BucketNone, withLate)
	stats("absorbing, the run quiet", absorbing, query.OpenHourStats{Builds: 1, Absorbs: 1, Reads: 3, BaseRuns: 4, Entries: 49})
	report("absorbing, to 10:25:00.5", absorbing, hour, mustTime(t, "2026-01-10T10:25:00.5Z"), query.BucketMinute,
		map[string]goldentest.GroupWant{"planner": goldenByAgent["planner"], "summarizer": goldenByAgent["summarizer"], "latecomer": goldenByAgent["solo"]})
	now = now.Add(-time.Minute)

	// The summarizer's doGenerate span delivered again (a duplicate, a
	// later version): its run's key changes, the hour is built again, the
	// duplicate counted once; the latecomer's run, still in flight, stays
	// out of the base.
	var dup schema.Span
	for _, s := range spans {
		if s.SpanID == "0000000000000202" { // ai.generateText.doGenerate
			dup = s
		}
	}
	if dup.SpanID == "" {
		t.Fatal("the summarizer's doGenerate span is not in the corpus")
	}
	insert(t, store, []schema.Span{dup}, 2)
	report("cached, after a duplicate", cached, hour, now, query.BucketNone, withLate)
	report("uncached, after a duplicate", uncached, hour, now, query.BucketNone, withLate)
	stats("after a duplicate", cached, query.OpenHourStats{Builds: 2, Loads: 2, Reads: 9, BaseRuns: 3, Entries: 40})

	// Views other than by agent: the same as the uncached reader's.
	before := query.OpenHour(cached).Reads
	for _, by := range []string{query.ByModel, query.ByTool, query.ByTask, query.ByProvider} {
		a, err := cached.Costs(ctx, query.CostFilter{Project: "golden", By: by, Since: hour, Until: now})
		if err != nil {
			t.Fatal(err)
		}
		b, err := uncached.Costs(ctx, query.CostFilter{Project: "golden", By: by, Since: hour, Until: now})
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]goldentest.GroupWant{}
		for _, g := range b.Groups {
			want[g.Key] = goldentest.GroupWant{Spans: g.Spans, LLM: g.LLMCalls, ToolCalls: g.ToolCalls, Retries: g.ToolRetries,
				Errors: g.ToolErrors, Input: g.Usage.Input, CacheRead: g.Usage.CacheRead, CacheWrite: g.Usage.CacheWrite,
				Output: g.Usage.Output, Cost: g.Cost.Total, Tax: g.RetryTaxUSD, Unpriced: g.UnpricedSpans, Client: g.ClientCostSpans}
		}
		goldentest.CheckGroups(t, "by "+by, a, want, true)
	}
	// A filtered report (by agent) is read from the spans.
	if _, err := cached.Costs(ctx, query.CostFilter{Project: "golden", By: query.ByModel, Agent: "planner", Since: hour, Until: now}); err != nil {
		t.Fatal(err)
	}
	if got := query.OpenHour(cached).Reads; got != before+4 {
		// the four views above answered from the cache; the filtered one not
		t.Errorf("reports answered from the cache: %d, want %d", got, before+4)
	}

	// A cache of 39 entries cannot hold the hour: read from the spans.
	small := query.NewReader(store, query.WithEdgeHourSpans(39), query.WithOpenHourClock(clock))
	report("over the cache's bound", small, hour, now, query.BucketNone, withLate)
	stats("over the cache's bound", small, query.OpenHourStats{Builds: 1, BaseRuns: 3, TooMany: true})
	report("over the cache's bound, again", small, hour, now, query.BucketNone, withLate)
	stats("over the cache's bound, again", small, query.OpenHourStats{Builds: 1, BaseRuns: 3, TooMany: true})

	// At 13:30 the 10:00 hour is neither the open hour nor the one before:
	// read from the spans, the cache untouched.
	later := query.NewReader(store, query.WithOpenHourClock(func() time.Time { return mustTime(t, "2026-01-10T13:30:00Z") }))
	report("an older hour", later, hour, now, query.BucketNone, withLate)
	stats("an older hour", later, query.OpenHourStats{})
}
