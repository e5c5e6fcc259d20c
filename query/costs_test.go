package query_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/tallyhq/tally/internal/goldentest"
	"github.com/tallyhq/tally/query"
	"github.com/tallyhq/tally/rollup"
	"github.com/tallyhq/tally/schema"
)

func TestGoldenSpanCosts(t *testing.T) {
	spans := loadCorpus(t, "testdata/golden.json", "golden", builtin(t))
	type want struct {
		source, entry string
		total         float64
		input         uint64
	}
	wants := map[string]want{
		// Agent spans are priced like any span (no model here: unpriced);
		// readers count them only when the run's inference spans carry no usage.
		"0000000000000101": {schema.CostUnpriced, "", 0, 3800},
		"0000000000000102": {schema.CostCatalog, "openai/gpt-4o", goldentest.CostGPT4o, 1200},
		"0000000000000104": {schema.CostCatalog, "anthropic/claude-sonnet-4-5", goldentest.CostClaudeAdditive, 2600},
		"0000000000000201": {schema.CostCatalog, "openai/gpt-4o-mini", goldentest.CostVercelMini, 1000},
		"0000000000000202": {schema.CostCatalog, "openai/gpt-4o-mini", goldentest.CostVercelMini, 1000},
		"0000000000000302": {schema.CostCatalog, "openai/gpt-4.1", goldentest.CostOpenInference, 5000},
		"0000000000000303": {schema.CostCatalog, "anthropic/claude-sonnet-4-5", goldentest.CostLongContext, 250000},
		"0000000000000402": {schema.CostUnpriced, "", 0, 100},
		"0000000000000403": {schema.CostClient, "", goldentest.CostClient, 10},
		"0000000000000404": {schema.CostCatalog, "aws.bedrock/claude-3-5-haiku", goldentest.CostBedrockHaiku, 2000},
		"0000000000000501": {schema.CostCatalog, "openai/gpt-4o-mini", goldentest.CostSolo, 500},
	}
	seen := 0
	for _, s := range spans {
		w, ok := wants[s.SpanID]
		if !ok {
			continue
		}
		seen++
		if s.CostSource != w.source || s.PriceEntry != w.entry || !near(s.CostTotal, w.total) || s.InputTokens != w.input {
			t.Errorf("span %s (%s): source %q entry %q cost %v input %d; want %q %q %v %d",
				s.SpanID, s.Name, s.CostSource, s.PriceEntry, s.CostTotal, s.InputTokens, w.source, w.entry, w.total, w.input)
		}
	}
	if seen != len(wants) {
		t.Fatalf("found %d of %d expected spans", seen, len(wants))
	}
}

var goldenByAgent = map[string]goldentest.GroupWant{
	// 5 spans; usage from the two chats only (the agent span repeats them):
	// input 1200+2600, cache read 1000+2000, write 500, output 300+400.
	// The Claude call between the failed search and its retry is retry tax.
	"planner": {Spans: 5, LLM: 2, ToolCalls: 2, Retries: 1, Errors: 1, Input: 3800, CacheRead: 3000,
		CacheWrite: 500, Output: 700, Cost: goldentest.CostGPT4o + goldentest.CostClaudeAdditive, Tax: goldentest.CostClaudeAdditive},
	"summarizer": {Spans: 2, LLM: 1, Input: 1000, Output: 200, Cost: goldentest.CostVercelMini},
	// input 5000+250000, cache read 4000, output 1000+1000.
	"researcher": {Spans: 3, LLM: 2, Input: 255000, CacheRead: 4000, Output: 2000, Cost: goldentest.CostOpenInference + goldentest.CostLongContext},
	// input 100+10+2000, output 50+5+100.
	"experimenter": {Spans: 4, LLM: 3, Input: 2110, Output: 155, Cost: goldentest.CostClient + goldentest.CostBedrockHaiku, Unpriced: 1, Client: 1},
	// only aggregated usage in the run: the agent span's counts, and is priced.
	"solo": {Spans: 1, Input: 500, Output: 50, Cost: goldentest.CostSolo},
}

var goldenByTask = map[string]goldentest.GroupWant{
	"plan-trip":                 goldenByAgent["planner"],
	"ai.generateText":           goldenByAgent["summarizer"],
	"research":                  goldenByAgent["researcher"],
	"invoke_agent experimenter": goldenByAgent["experimenter"],
	"invoke_agent solo":         goldenByAgent["solo"],
}

var goldenByTool = map[string]goldentest.GroupWant{
	// the two search calls and the Claude call charged to the retry.
	"search": {Spans: 3, LLM: 1, ToolCalls: 2, Retries: 1, Errors: 1, Input: 2600, CacheRead: 2000,
		CacheWrite: 500, Output: 400, Cost: goldentest.CostClaudeAdditive, Tax: goldentest.CostClaudeAdditive},
}

// goldenTotalCost is every priced span: the sum of the agents' costs.
const goldenTotalCost = goldentest.CostGPT4o + goldentest.CostClaudeAdditive + goldentest.CostVercelMini + goldentest.CostOpenInference + goldentest.CostLongContext + goldentest.CostClient + goldentest.CostBedrockHaiku + goldentest.CostSolo

func checkGolden(t *testing.T, r *query.Reader, since, until time.Time, wantRolled int) {
	t.Helper()
	ctx := context.Background()
	for _, tc := range []struct {
		by         string
		wants      map[string]goldentest.GroupWant
		exhaustive bool
	}{
		{query.ByAgent, goldenByAgent, true},
		{query.ByTask, goldenByTask, true},
		{query.ByTool, goldenByTool, false},
	} {
		rep, err := r.Costs(ctx, query.CostFilter{Project: "golden", By: tc.by, Since: since, Until: until})
		if err != nil {
			t.Fatal(err)
		}
		goldentest.CheckGroups(t, "by "+tc.by, rep, tc.wants, tc.exhaustive)
		if rep.Total.Spans != 15 || !near(rep.Total.Cost.Total, goldenTotalCost) {
			t.Errorf("by %s: total %d spans, %v USD; want 15, %v", tc.by, rep.Total.Spans, rep.Total.Cost.Total, goldenTotalCost)
		}
		if rep.Freshness.RolledUpHours != wantRolled {
			t.Errorf("by %s: %d rolled-up hours, want %d", tc.by, rep.Freshness.RolledUpHours, wantRolled)
		}
		if len(rep.Unmatched) != 1 || rep.Unmatched[0] != (query.UnmatchedModel{Provider: "acme", Model: "acme-large-2", Spans: 1, InputTokens: 100, OutputTokens: 50}) {
			t.Errorf("by %s: unmatched %+v, want acme/acme-large-2 with 1 span, 100 in, 50 out", tc.by, rep.Unmatched)
		}
	}
	rep, err := r.Costs(ctx, query.CostFilter{Project: "golden", By: query.ByModel, Since: since, Until: until})
	if err != nil {
		t.Fatal(err)
	}
	goldentest.CheckGroups(t, "by model", rep, map[string]goldentest.GroupWant{
		"gpt-4o-2024-08-06":          {Spans: 1, LLM: 1, Input: 1200, CacheRead: 1000, Output: 300, Cost: goldentest.CostGPT4o},
		"claude-sonnet-4-5-20250929": {Spans: 1, LLM: 1, Input: 2600, CacheRead: 2000, CacheWrite: 500, Output: 400, Cost: goldentest.CostClaudeAdditive, Tax: goldentest.CostClaudeAdditive},
		"gpt-4.1":                    {Spans: 1, LLM: 1, Input: 5000, CacheRead: 4000, Output: 1000, Cost: goldentest.CostOpenInference},
		"claude-sonnet-4-5":          {Spans: 1, LLM: 1, Input: 250000, Output: 1000, Cost: goldentest.CostLongContext},
		"acme-large-2":               {Spans: 1, LLM: 1, Input: 100, Output: 50, Unpriced: 1},
		"acme-mini":                  {Spans: 1, LLM: 1, Input: 10, Output: 5, Cost: goldentest.CostClient, Client: 1},
	}, false)
}

func TestCostsGoldenExactlyOnce(t *testing.T) {
	ctx := context.Background()
	store := openStore(t)
	spans := loadCorpus(t, "testdata/golden.json", "golden", builtin(t))
	// Delivered twice (an exporter retry): every figure must count it once.
	insert(t, store, spans, 1)
	insert(t, store, spans, 2)
	// The same spans in another project must not leak in.
	other := loadCorpus(t, "testdata/golden.json", "other", builtin(t))
	insert(t, store, other, 1)
	r := query.NewReader(store)
	since, until := mustTime(t, "2026-01-10T09:00:00Z"), mustTime(t, "2026-01-10T13:00:00Z")

	t.Run("live", func(t *testing.T) { checkGolden(t, r, since, until, 0) })

	job := rollup.New(store, rollup.Config{})
	stats, err := job.RefreshRange(ctx, mustTime(t, "2026-01-10T00:00:00Z"), mustTime(t, "2026-01-11T00:00:00Z"))
	if err != nil {
		t.Fatal(err)
	}
	if stats.HoursRecomputed < 24 {
		t.Fatalf("first refresh recomputed %d hours, want all 24 of the day", stats.HoursRecomputed)
	}
	t.Run("rolled up", func(t *testing.T) { checkGolden(t, r, since, until, 4) })

	// Nothing changed: a second refresh recomputes nothing and changes nothing.
	stats, err = job.RefreshRange(ctx, mustTime(t, "2026-01-10T00:00:00Z"), mustTime(t, "2026-01-11T00:00:00Z"))
	if err != nil {
		t.Fatal(err)
	}
	if stats.HoursRecomputed != 0 {
		t.Errorf("second refresh recomputed %d hours, want 0", stats.HoursRecomputed)
	}
	t.Run("rolled up twice", func(t *testing.T) { checkGolden(t, r, since, until, 4) })

	// A third delivery after the rollup: the hours' fingerprints change,
	// the refresh recomputes them, and the figures stay the same.
	insert(t, store, spans, 3)
	if stats, err = job.RefreshRange(ctx, mustTime(t, "2026-01-10T00:00:00Z"), mustTime(t, "2026-01-11T00:00:00Z")); err != nil {
		t.Fatal(err)
	}
	if stats.HoursRecomputed == 0 {
		t.Errorf("refresh after a redelivery recomputed nothing")
	}
	t.Run("after redelivery", func(t *testing.T) { checkGolden(t, r, since, until, 4) })

	// Hours of more spans than one load may hold are loaded in parts of
	// their runs (here: at most 2 spans a load, so dozens of parts): the
	// same figures, each run counted once.
	insert(t, store, spans, 4)
	if stats, err = rollup.New(store, rollup.Config{MaxLoadSpans: 2}).RefreshRange(ctx,
		mustTime(t, "2026-01-10T00:00:00Z"), mustTime(t, "2026-01-11T00:00:00Z")); err != nil {
		t.Fatal(err)
	}
	if stats.HoursRecomputed == 0 {
		t.Errorf("refresh in parts recomputed nothing")
	}
	t.Run("rolled up in parts", func(t *testing.T) { checkGolden(t, r, since, until, 4) })
}

// TestCostsRolledUpInRanges: the golden corpus with its five runs' trace
// ids spread over five prefixes, the 10:00 hour's spans loaded by the
// rollup at most as many rows a load as the largest run has: the hour's
// runs are cut into ranges of trace ids between the prefixes (no shard by
// hash), and the figures are the golden ones, each run counted once.
func TestCostsRolledUpInRanges(t *testing.T) {
	ctx := context.Background()
	store := openStore(t)
	spans := loadCorpus(t, "testdata/golden.json", "golden", builtin(t))
	prefixes := []string{"1a0", "4c2", "7e4", "a16", "d38"}
	perRun := map[string]int{}
	for i := range spans {
		id := spans[i].TraceID // 000…01 to 000…05
		spans[i].TraceID = prefixes[id[len(id)-1]-'1'] + id[3:]
		perRun[spans[i].TraceID]++
	}
	insert(t, store, spans, 1)
	largest := 0
	for _, n := range perRun {
		largest = max(largest, n)
	}
	from, to := mustTime(t, "2026-01-10T09:00:00Z"), mustTime(t, "2026-01-10T13:00:00Z")
	shards, err := query.NewReader(store).SpanShards(ctx, from, to, largest, len(spans))
	if err != nil {
		t.Fatal(err)
	}
	if len(shards) < 2 || shards[0].Of != 0 || shards[0].Lo != "" || shards[len(shards)-1].Hi != "" {
		t.Fatalf("%d spans in runs of at most %d, loaded %d at most: shards %+v, want ranges", len(spans), largest, largest, shards)
	}
	for i := 1; i < len(shards); i++ {
		if shards[i].Lo != shards[i-1].Hi || !slices.Contains(prefixes, shards[i].Lo) {
			t.Fatalf("shards %+v: want consecutive ranges cut at the runs' prefixes", shards)
		}
	}
	stats, err := rollup.New(store, rollup.Config{MaxLoadSpans: largest}).RefreshRange(ctx,
		mustTime(t, "2026-01-10T00:00:00Z"), mustTime(t, "2026-01-11T00:00:00Z"))
	if err != nil {
		t.Fatal(err)
	}
	if stats.SpanLoads < 2 {
		t.Errorf("the rollup made %d loads, want the hours in parts", stats.SpanLoads)
	}
	checkGolden(t, query.NewReader(store), from, to, 4)
}

func TestCostsMixedRolledAndLive(t *testing.T) {
	ctx := context.Background()
	store := openStore(t)
	spans := loadCorpus(t, "testdata/golden.json", "golden", builtin(t))
	insert(t, store, spans, 1)
	insert(t, store, spans, 2)
	// Roll up only the 10:00 hour: 11:00 (experimenter, solo) plays the
	// open hour, read live.
	job := rollup.New(store, rollup.Config{})
	if _, err := job.RefreshRange(ctx, mustTime(t, "2026-01-10T10:00:00Z"), mustTime(t, "2026-01-10T11:00:00Z")); err != nil {
		t.Fatal(err)
	}
	r := query.NewReader(store)
	since, until := mustTime(t, "2026-01-10T09:00:00Z"), mustTime(t, "2026-01-10T13:00:00Z")
	rep, err := r.Costs(ctx, query.CostFilter{Project: "golden", By: query.ByAgent, Since: since, Until: until, Bucket: query.BucketHour})
	if err != nil {
		t.Fatal(err)
	}
	// The refresh also computes the 09:00 neighbour (empty): 09:00 and 10:00 rolled up.
	if rep.Freshness.RolledUpHours != 2 {
		t.Errorf("rolled-up hours %d, want 2 (09:00, 10:00); live %+v", rep.Freshness.RolledUpHours, rep.Freshness.Live)
	}
	goldentest.CheckGroups(t, "mixed by agent", rep, goldenByAgent, true)
	// Series: planner in the 10:00 bucket only; experimenter in 11:00 only.
	for _, g := range rep.Groups {
		var want time.Time
		switch g.Key {
		case "planner":
			want = mustTime(t, "2026-01-10T10:00:00Z")
		case "experimenter":
			want = mustTime(t, "2026-01-10T11:00:00Z")
		default:
			continue
		}
		if len(g.Series) != 1 || !g.Series[0].Time.Equal(want) || !near(g.Series[0].Cost.Total, g.Cost.Total) {
			t.Errorf("%s series %+v, want one point at %s with the group's cost", g.Key, g.Series, want)
		}
	}
}

// TestCostsReadOnlyRecordedHoursFromTheRollup: the rollup's rows count for
// an hour only once the hour's record says it was computed; the hours
// between recorded ones are read live. Here 09:00 and 10:00 are computed,
// 11:00 (experimenter, solo) is not, 12:00 holds rows of a computation
// that never recorded its hour (a crash between the two inserts), and
// 13:00 is recorded empty: the report is the golden figures, without the
// unrecorded rows' agent, with and without hour buckets.
func TestCostsReadOnlyRecordedHoursFromTheRollup(t *testing.T) {
	ctx := context.Background()
	store := openStore(t)
	insert(t, store, loadCorpus(t, "testdata/golden.json", "golden", builtin(t)), 1)
	if _, err := rollup.New(store, rollup.Config{}).RefreshRange(ctx, mustTime(t, "2026-01-10T10:00:00Z"), mustTime(t, "2026-01-10T11:00:00Z")); err != nil {
		t.Fatal(err)
	}
	noon := mustTime(t, "2026-01-10T12:00:00Z")
	if err := store.InsertCostRollup(ctx, []schema.CostRollupRow{{Project: "golden", Grain: schema.GrainAgent, Hour: noon,
		Agent: "unrecorded", Spans: 7, CostTotal: 1.5, Version: uint64(time.Now().UnixNano())}}); err != nil {
		t.Fatal(err)
	}
	if err := store.InsertRollupHours(ctx, []schema.RollupHourRow{{Hour: noon.Add(time.Hour), Version: uint64(time.Now().UnixNano()),
		ComputedAt: time.Now().UTC().Truncate(time.Second)}}); err != nil {
		t.Fatal(err)
	}
	r := query.NewReader(store)
	since, until := mustTime(t, "2026-01-10T09:00:00Z"), mustTime(t, "2026-01-10T14:00:00Z")
	for _, bucket := range []string{query.BucketNone, query.BucketHour} {
		rep, err := r.Costs(ctx, query.CostFilter{Project: "golden", By: query.ByAgent, Since: since, Until: until, Bucket: bucket})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Freshness.RolledUpHours != 3 {
			t.Errorf("bucket %q: rolled-up hours %d, want 3 (09:00, 10:00, 13:00); live %+v", bucket, rep.Freshness.RolledUpHours, rep.Freshness.Live)
		}
		goldentest.CheckGroups(t, "by agent, bucket "+bucket, rep, goldenByAgent, true)
		if rep.Total.Spans != 15 || !near(rep.Total.Cost.Total, goldenTotalCost) {
			t.Errorf("bucket %q: total %d spans, %v USD; want 15, %v", bucket, rep.Total.Spans, rep.Total.Cost.Total, goldenTotalCost)
		}
	}
}

// TestCostsEdgeHourFromTheCache: a report that starts in the middle of a
// rolled-up hour takes that hour's whole minutes from the edge hour cache,
// as of the rollup's computation of the hour, and the part of the minute it
// starts in from the spans. From 10:15 the golden figures are every
// agent's but the planner's (its run is at 10:05). A span that arrives for
// 10:25 afterwards is in the report once the rollup has computed the hour
// again, like the rolled-up hours; a reader without the cache, or whose
// cache cannot hold the hour, reads it at once.
func TestCostsEdgeHourFromTheCache(t *testing.T) {
	ctx := context.Background()
	store := openStore(t)
	spans := loadCorpus(t, "testdata/golden.json", "golden", builtin(t))
	insert(t, store, spans, 1)
	job := rollup.New(store, rollup.Config{})
	day, next := mustTime(t, "2026-01-10T00:00:00Z"), mustTime(t, "2026-01-11T00:00:00Z")
	if _, err := job.RefreshRange(ctx, day, next); err != nil {
		t.Fatal(err)
	}
	since, until := mustTime(t, "2026-01-10T10:15:00Z"), mustTime(t, "2026-01-10T13:00:00Z")
	fromSpans := map[string]goldentest.GroupWant{}
	for k, v := range goldenByAgent {
		if k != "planner" {
			fromSpans[k] = v
		}
	}
	cached := query.NewReader(store)
	uncached := query.NewReader(store, query.WithEdgeHourSpans(0))
	// The 10:00 hour adds up to 40 entries, one for each minute, view
	// (by agent, model, provider, provider and model, task, service,
	// tool, conversation, user) and value: the planner's run at 10:05 has
	// one agent, task, service, conversation and user, three models and
	// providers (none on the agent span and the tool calls, the two
	// chats') and two tools (none, search): 6 + 3·3 + 2 = 16; the
	// summarizer's at 10:20 one value of each view (both spans are one
	// call of openai/gpt-4o-mini): 9; the researcher's at 10:30 three
	// models and providers (none, gpt-4.1 of openai, claude-sonnet-4-5 of
	// anthropic) and one of the others: 6 + 3·3 = 15. A cache of 40 holds
	// it, one of 39 does not.
	exact := query.NewReader(store, query.WithEdgeHourSpans(40))
	small := query.NewReader(store, query.WithEdgeHourSpans(39))
	// The hour has 10 rows: in parts of 3 spans, four loads.
	parts := query.NewReader(store, query.WithEdgeHourPartSpans(3))
	check := func(label string, r *query.Reader, want map[string]goldentest.GroupWant) {
		t.Helper()
		for _, bucket := range []string{query.BucketNone, query.BucketHour} {
			rep, err := r.Costs(ctx, query.CostFilter{Project: "golden", By: query.ByAgent, Since: since, Until: until, Bucket: bucket})
			if err != nil {
				t.Fatal(err)
			}
			goldentest.CheckGroups(t, label+", bucket "+bucket, rep, want, true)
			if rep.Freshness.RolledUpHours != 2 { // 11:00, 12:00; 10:00 is the edge
				t.Errorf("%s: rolled-up hours %d, want 2; live %+v", label, rep.Freshness.RolledUpHours, rep.Freshness.Live)
			}
			for _, g := range rep.Groups {
				if g.Key == "summarizer" && bucket == query.BucketHour &&
					(len(g.Series) != 1 || !g.Series[0].Time.Equal(mustTime(t, "2026-01-10T10:00:00Z"))) {
					t.Errorf("%s: summarizer series %+v, want one point at 10:00", label, g.Series)
				}
			}
		}
	}
	for _, r := range []struct {
		name string
		r    *query.Reader
	}{{"cached", cached}, {"uncached", uncached}, {"at the cache's bound", exact}, {"over the cache's bound", small}, {"in parts", parts}} {
		check(r.name, r.r, fromSpans)
	}
	for _, c := range []struct {
		name    string
		r       *query.Reader
		entries int
		held    bool
		parts   int
	}{{"cached", cached, 40, true, 1}, {"uncached", uncached, 0, false, 0}, {"at the cache's bound", exact, 40, true, 1},
		{"over the cache's bound", small, 0, false, 1}, {"in parts", parts, 40, true, 4}} {
		if entries, held, parts := query.EdgeHour(c.r); entries != c.entries || held != c.held || parts != c.parts {
			t.Errorf("%s: the cache holds %d entries (an hour: %v), loaded in %d parts; want %d, %v, %d",
				c.name, entries, held, parts, c.entries, c.held, c.parts)
		}
	}
	// From 10:20:00.5 the summarizer's ai.generateText span (10:20:00)
	// is left out, read from the spans with the rest of its minute: its
	// usage repeats the doGenerate span's (10:20:01), which counts, so
	// the summarizer keeps its call, tokens and cost, one span less.
	midMinute := maps.Clone(fromSpans)
	summarizer := midMinute["summarizer"]
	summarizer.Spans--
	midMinute["summarizer"] = summarizer
	for _, r := range []struct {
		name string
		r    *query.Reader
	}{{"cached", cached}, {"uncached", uncached}} {
		rep, err := r.r.Costs(ctx, query.CostFilter{Project: "golden", By: query.ByAgent, Since: since.Add(5*time.Minute + 500*time.Millisecond), Until: until})
		if err != nil {
			t.Fatal(err)
		}
		goldentest.CheckGroups(t, r.name+", from the middle of a minute", rep, midMinute, true)
	}

	// Reports that end in the rolled-up 10:00 hour take its whole minutes
	// from the cache too, and the part of the minute they end in from its
	// spans: to 10:25 the planner's and the summarizer's runs; to
	// 10:05:05 the planner's first three spans (the agent span, whose
	// usage repeats its chats', the gpt-4o chat and the failed search:
	// the retry and the Claude call start later).
	ends := query.NewReader(store)
	for _, c := range []struct {
		name  string
		until time.Time
		want  map[string]goldentest.GroupWant
	}{
		{"to a whole minute", mustTime(t, "2026-01-10T10:25:00Z"),
			map[string]goldentest.GroupWant{"planner": goldenByAgent["planner"], "summarizer": goldenByAgent["summarizer"]}},
		{"to the middle of a minute", mustTime(t, "2026-01-10T10:05:05Z"),
			map[string]goldentest.GroupWant{"planner": {Spans: 3, LLM: 1, ToolCalls: 1, Errors: 1, Input: 1200, CacheRead: 1000,
				Output: 300, Cost: goldentest.CostGPT4o}}},
	} {
		for _, r := range []struct {
			name string
			r    *query.Reader
		}{{"cached", ends}, {"uncached", uncached}} {
			rep, err := r.r.Costs(ctx, query.CostFilter{Project: "golden", By: query.ByAgent, Since: mustTime(t, "2026-01-10T10:00:00Z"), Until: c.until})
			if err != nil {
				t.Fatal(err)
			}
			goldentest.CheckGroups(t, r.name+", "+c.name, rep, c.want, true)
		}
	}
	// The hour and one minute (10:05) loaded; the cache holds two hours:
	// reports starting in the 10:00 and 11:00 hours in turn load each once.
	if n := query.EdgeHourLoads(ends); n != 2 {
		t.Errorf("the cache loaded %d hours and minutes for the reports ending at 10:00, want 2 (the hour, the minute 10:05)", n)
	}
	for range 2 {
		for _, from := range []string{"2026-01-10T10:15:00Z", "2026-01-10T11:30:00Z"} {
			if _, err := ends.Costs(ctx, query.CostFilter{Project: "golden", By: query.ByAgent, Since: mustTime(t, from), Until: until}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n := query.EdgeHourLoads(ends); n != 3 {
		t.Errorf("the cache loaded %d hours and minutes after reports from 10:15 and 11:30 twice, want 3 (the 11:00 hour once more)", n)
	}

	// A span for 10:25 arrives: another run, of agent latecomer, with the
	// usage and cost of the solo run's span.
	late := lateSpan(t, spans, "0000000000000501", "latecomer", mustTime(t, "2026-01-10T10:25:00Z"))
	insert(t, store, []schema.Span{late}, 1)
	withLate := maps.Clone(fromSpans)
	withLate["latecomer"] = goldenByAgent["solo"]
	check("cached, before the rollup computes the hour again", cached, fromSpans)
	check("at the cache's bound, before the rollup computes the hour again", exact, fromSpans)
	check("uncached, at once", uncached, withLate)
	check("over the cache's bound, at once", small, withLate)
	if _, err := job.RefreshRange(ctx, day, next); err != nil {
		t.Fatal(err)
	}
	check("cached, after the rollup computed the hour again", cached, withLate)
}

func TestCostsDayAndMinuteBuckets(t *testing.T) {
	ctx := context.Background()
	store := openStore(t)
	insert(t, store, loadCorpus(t, "testdata/golden.json", "golden", builtin(t)), 1)
	r := query.NewReader(store)
	rep, err := r.Costs(ctx, query.CostFilter{Project: "golden", By: query.ByAgent, Bucket: query.BucketMinute,
		Since: mustTime(t, "2026-01-10T10:00:00Z"), Until: mustTime(t, "2026-01-10T11:00:00Z")})
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range rep.Groups {
		if g.Key != "planner" {
			continue
		}
		// planner's spans start at 10:05:00–10:05:10: one minute bucket.
		if len(g.Series) != 1 || !g.Series[0].Time.Equal(mustTime(t, "2026-01-10T10:05:00Z")) {
			t.Errorf("planner minute series %+v, want one point at 10:05", g.Series)
		}
	}
	_, err = r.Costs(ctx, query.CostFilter{Project: "golden", By: query.ByAgent, Bucket: query.BucketMinute,
		Since: mustTime(t, "2026-01-01T00:00:00Z"), Until: mustTime(t, "2026-01-10T00:00:00Z")})
	if !errors.Is(err, query.ErrInvalidFilter) {
		t.Errorf("minute buckets over 9 days: err %v, want ErrInvalidFilter", err)
	}
}

// TestCostsByCatalogModel: by=model through the cost reader groups the raw
// names of one catalog model. In the golden corpus claude-sonnet-4-5
// (250,000 in, 1,000 out: goldentest.CostLongContext) and
// claude-sonnet-4-5-20250929 (goldentest.CostClaudeAdditive) are one model;
// gpt-4o-2024-08-06 is gpt-4o; acme-large-2 matches no entry and keeps its
// name.
func TestCostsByCatalogModel(t *testing.T) {
	store := openStore(t)
	insert(t, store, loadCorpus(t, "testdata/golden.json", "golden", builtin(t)), 1)
	r := query.NewCostReader(query.NewReader(store), builtin(t))
	rep, err := r.Costs(context.Background(), query.CostFilter{Project: "golden", By: query.ByModel,
		Since: mustTime(t, "2026-01-10T09:00:00Z"), Until: mustTime(t, "2026-01-10T13:00:00Z")})
	if err != nil {
		t.Fatal(err)
	}
	groups := map[string]query.CostGroup{}
	for _, g := range rep.Groups {
		groups[g.Key] = g
	}
	sonnet := groups["claude-sonnet-4-5"]
	if !reflect.DeepEqual(sonnet.Models, []string{"claude-sonnet-4-5", "claude-sonnet-4-5-20250929"}) || sonnet.Spans != 2 ||
		!near(sonnet.Cost.Total, goldentest.CostLongContext+goldentest.CostClaudeAdditive) {
		t.Errorf("claude-sonnet-4-5: models %v, %d spans, %v USD; want both names, 2 spans, %v", sonnet.Models, sonnet.Spans,
			sonnet.Cost.Total, goldentest.CostLongContext+goldentest.CostClaudeAdditive)
	}
	if g := groups["gpt-4o"]; !reflect.DeepEqual(g.Models, []string{"gpt-4o-2024-08-06"}) || !near(g.Cost.Total, goldentest.CostGPT4o) {
		t.Errorf("gpt-4o: %+v", g)
	}
	if g, ok := groups["acme-large-2"]; !ok || !reflect.DeepEqual(g.Models, []string{"acme-large-2"}) {
		t.Errorf("acme-large-2 (no price): %+v, present %v", g, ok)
	}
	if _, ok := groups["claude-sonnet-4-5-20250929"]; ok {
		t.Error("the dated name is still a group of its own")
	}

	// One group: the catalog model's, both names added up before the
	// limit (by raw name the long-context call alone would lead).
	one, err := r.Costs(context.Background(), query.CostFilter{Project: "golden", By: query.ByModel,
		Since: mustTime(t, "2026-01-10T09:00:00Z"), Until: mustTime(t, "2026-01-10T13:00:00Z"), Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(one.Groups) != 1 || one.Groups[0].Key != "claude-sonnet-4-5" || len(one.Groups[0].Models) != 2 ||
		one.GroupsTotal != len(rep.Groups) || one.Others == nil ||
		!near(one.Others.Cost.Total, rep.Total.Cost.Total-goldentest.CostLongContext-goldentest.CostClaudeAdditive) {
		t.Errorf("limit 1: %+v (of %d), others %+v; want claude-sonnet-4-5 of both names, of %d, the rest of %v USD",
			one.Groups, one.GroupsTotal, one.Others, len(rep.Groups), rep.Total.Cost.Total)
	}
}

// TestCostsGroupLimit: a report lists the costliest Limit groups and adds
// up the others, their series bucket by bucket; the totals stay the
// whole range's. By agent over the golden day, by cost: the researcher
// (1.5345 USD), the experimenter (0.0143), the planner (0.00475 +
// 0.008775 = 0.013525), the summarizer (0.00027), the solo run
// (0.000105).
func TestCostsGroupLimit(t *testing.T) {
	ctx := context.Background()
	store := openStore(t)
	insert(t, store, loadCorpus(t, "testdata/golden.json", "golden", builtin(t)), 1)
	r := query.NewReader(store)
	since, until := mustTime(t, "2026-01-10T09:00:00Z"), mustTime(t, "2026-01-10T13:00:00Z")
	costs := func(limit int, bucket string) query.CostReport {
		t.Helper()
		rep, err := r.Costs(ctx, query.CostFilter{Project: "golden", By: query.ByAgent, Since: since, Until: until, Limit: limit, Bucket: bucket})
		if err != nil {
			t.Fatalf("limit %d: %v", limit, err)
		}
		return rep
	}
	keys := func(rep query.CostReport) []string {
		var out []string
		for _, g := range rep.Groups {
			out = append(out, g.Key)
		}
		return out
	}
	// The summarizer's and the solo run's figures added up.
	tail := goldentest.GroupWant{Spans: 3, LLM: 1, Input: 1500, Output: 250, Cost: goldentest.CostVercelMini + goldentest.CostSolo}
	exp := goldenByAgent["experimenter"]
	for _, c := range []struct {
		limit  int
		keys   []string
		others *goldentest.GroupWant
	}{
		{0, []string{"researcher", "experimenter", "planner", "summarizer", "solo"}, nil},
		{query.MaxCostGroups, []string{"researcher", "experimenter", "planner", "summarizer", "solo"}, nil},
		{5, []string{"researcher", "experimenter", "planner", "summarizer", "solo"}, nil},
		{4, []string{"researcher", "experimenter", "planner", "summarizer"}, &goldentest.GroupWant{Spans: 1, Input: 500, Output: 50, Cost: goldentest.CostSolo}},
		{3, []string{"researcher", "experimenter", "planner"}, &tail},
		{1, []string{"researcher"}, &goldentest.GroupWant{Spans: 5 + exp.Spans + tail.Spans, LLM: 2 + exp.LLM + tail.LLM, ToolCalls: 2, Retries: 1, Errors: 1,
			Input: 3800 + exp.Input + tail.Input, CacheRead: 3000, CacheWrite: 500, Output: 700 + exp.Output + tail.Output,
			Cost: goldentest.CostGPT4o + goldentest.CostClaudeAdditive + exp.Cost + tail.Cost, Tax: goldentest.CostClaudeAdditive,
			Unpriced: exp.Unpriced, Client: exp.Client}},
	} {
		rep := costs(c.limit, query.BucketNone)
		if got := keys(rep); !slices.Equal(got, c.keys) || rep.GroupsTotal != 5 || rep.Total.Spans != 15 || !near(rep.Total.Cost.Total, goldenTotalCost) {
			t.Errorf("limit %d: groups %v of %d, total %d spans %v USD; want %v of 5, 15 spans %v USD", c.limit, got, rep.GroupsTotal,
				rep.Total.Spans, rep.Total.Cost.Total, c.keys, goldenTotalCost)
		}
		switch {
		case c.others == nil && rep.Others != nil:
			t.Errorf("limit %d: others %+v, want none", c.limit, rep.Others)
		case c.others != nil && rep.Others == nil:
			t.Errorf("limit %d: no others, want %+v", c.limit, *c.others)
		case c.others != nil:
			goldentest.CheckGroups(t, fmt.Sprintf("limit %d, others", c.limit), query.CostReport{Groups: []query.CostGroup{*rep.Others}},
				map[string]goldentest.GroupWant{"": *c.others}, true)
		}
	}
	// By hour, the others' series: the summarizer at 10:00, the solo run
	// at 11:00.
	rep := costs(3, query.BucketHour)
	if o := rep.Others; o == nil || len(o.Series) != 2 ||
		!o.Series[0].Time.Equal(mustTime(t, "2026-01-10T10:00:00Z")) || !near(o.Series[0].Cost.Total, goldentest.CostVercelMini) ||
		!o.Series[1].Time.Equal(mustTime(t, "2026-01-10T11:00:00Z")) || !near(o.Series[1].Cost.Total, goldentest.CostSolo) {
		t.Errorf("limit 3 by hour: others %+v, want the summarizer's %v USD at 10:00 and the solo run's %v at 11:00", rep.Others,
			goldentest.CostVercelMini, goldentest.CostSolo)
	}
	for _, limit := range []int{-1, query.MaxCostGroups + 1} {
		if _, err := r.Costs(ctx, query.CostFilter{Project: "golden", By: query.ByAgent, Since: since, Until: until, Limit: limit}); !errors.Is(err, query.ErrInvalidFilter) {
			t.Errorf("limit %d: %v, want ErrInvalidFilter", limit, err)
		}
	}
}

// TestCostsGroupLimitFromTheRollup lists a report's costliest groups when
// part of its range comes from the rollup (09:00 and 10:00) and part from
// the spans (from 11:00): the rollup is read in two steps, the keys' costs
// first and the listed keys' measures after, and a key with figures in
// both parts is ranked by its whole cost.
func TestCostsGroupLimitFromTheRollup(t *testing.T) {
	ctx := context.Background()
	store := openStore(t)
	spans := loadCorpus(t, "testdata/golden.json", "golden", builtin(t))
	// The researcher's long-context call (250,000 input and 1,000 output
	// tokens of claude-sonnet-4-5, CostLongContext) sent again at 11:55 as
	// a run of the summarizer's: the summarizer's 10:20 run is rolled up,
	// this one read from the spans.
	long := lateSpan(t, spans, "0000000000000303", "summarizer", mustTime(t, "2026-01-10T11:55:00Z"))
	long.Name, long.ConversationID = "chat long", "conv-1" // the planner's conversation (rolled up)
	insert(t, store, append(spans, long), 1)
	job := rollup.New(store, rollup.Config{})
	if _, err := job.RefreshRange(ctx, mustTime(t, "2026-01-10T10:00:00Z"), mustTime(t, "2026-01-10T11:00:00Z")); err != nil {
		t.Fatal(err)
	}
	// Reports by agent and model read the rollup in one step, as every
	// report of few keys does; this reader reads it in two, as reports by
	// conversation and user do.
	r := query.NewReader(store, query.WithTwoStepRollup())
	since, until := mustTime(t, "2026-01-10T09:00:00Z"), mustTime(t, "2026-01-10T13:00:00Z")
	costs := func(by string, limit int) query.CostReport {
		t.Helper()
		rep, err := r.Costs(ctx, query.CostFilter{Project: "golden", By: by, Since: since, Until: until, Limit: limit})
		if err != nil {
			t.Fatalf("by %s, limit %d: %v", by, limit, err)
		}
		if rep.Freshness.RolledUpHours != 2 || len(rep.Freshness.Live) != 1 || !rep.Freshness.Live[0].Since.Equal(mustTime(t, "2026-01-10T11:00:00Z")) {
			t.Fatalf("by %s, limit %d: %d rolled-up hours, want 2 (09:00, 10:00), live %+v, want from 11:00", by, limit, rep.Freshness.RolledUpHours, rep.Freshness.Live)
		}
		return rep
	}
	// By agent: the summarizer's rolled-up run alone (0.00027 USD) is the
	// cheapest but one; with its run from the spans (1.5225 USD) it is
	// the second costliest, after the researcher (0.012 + 1.5225), before
	// the experimenter (0.0123 + 0.002) and the planner (0.00475 +
	// 0.008775).
	summarizer := goldentest.GroupWant{Spans: 3, LLM: 2, Input: 1000 + 250000, Output: 200 + 1000,
		Cost: goldentest.CostVercelMini + goldentest.CostLongContext}
	rep := costs(query.ByAgent, 2)
	if len(rep.Groups) != 2 || rep.Groups[0].Key != "researcher" || rep.Groups[1].Key != "summarizer" || rep.GroupsTotal != 5 || rep.Others == nil {
		t.Fatalf("by agent, limit 2: groups %+v of %d, others %+v", rep.Groups, rep.GroupsTotal, rep.Others)
	}
	goldentest.CheckGroups(t, "by agent, limit 2", rep, map[string]goldentest.GroupWant{
		"researcher": goldenByAgent["researcher"], "summarizer": summarizer}, true)
	// The experimenter, the planner (rolled up) and the solo run (from the
	// spans) added up.
	exp, planner, solo := goldenByAgent["experimenter"], goldenByAgent["planner"], goldenByAgent["solo"]
	goldentest.CheckGroups(t, "by agent, limit 2, others", query.CostReport{Groups: []query.CostGroup{*rep.Others}},
		map[string]goldentest.GroupWant{"": {Spans: exp.Spans + planner.Spans + solo.Spans, LLM: exp.LLM + planner.LLM,
			ToolCalls: planner.ToolCalls, Retries: planner.Retries, Errors: planner.Errors, Input: exp.Input + planner.Input + solo.Input,
			CacheRead: planner.CacheRead, CacheWrite: planner.CacheWrite, Output: exp.Output + planner.Output + solo.Output,
			Cost: exp.Cost + planner.Cost + solo.Cost, Tax: planner.Tax, Unpriced: exp.Unpriced, Client: exp.Client}}, true)
	if rep.Total.Spans != 16 || !near(rep.Total.Cost.Total, goldenTotalCost+goldentest.CostLongContext) {
		t.Errorf("by agent, limit 2: total %d spans %v USD, want 16, %v", rep.Total.Spans, rep.Total.Cost.Total, goldenTotalCost+goldentest.CostLongContext)
	}

	// By model, against the report that lists every group (read in one
	// step: more groups than maxTopKeys asked for): at every limit the
	// same first groups, the rest added up in others. claude-sonnet-4-5
	// has figures in both parts (the planner's and the researcher's calls
	// rolled up, the summarizer's from the spans).
	checkTopAgainstAll(t, query.ByModel, costs)

	// By conversation, as every reader reads it (in two steps): conv-1 is
	// the planner's run (rolled up) and the summarizer's at 11:55 (from
	// the spans), 0.013525 + 1.5225 USD; every other run has none ("",
	// 1.549175 USD), the costliest.
	rep, err := query.NewReader(store).Costs(ctx, query.CostFilter{Project: "golden", By: query.ByConversation, Since: since, Until: until, Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	res, sum := goldenByAgent["researcher"], goldenByAgent["summarizer"]
	none := goldentest.GroupWant{Spans: res.Spans + exp.Spans + sum.Spans + solo.Spans, LLM: res.LLM + exp.LLM + sum.LLM,
		Input: res.Input + exp.Input + sum.Input + solo.Input, CacheRead: res.CacheRead, Output: res.Output + exp.Output + sum.Output + solo.Output,
		Cost: res.Cost + exp.Cost + sum.Cost + solo.Cost, Unpriced: exp.Unpriced, Client: exp.Client}
	conv1 := planner
	conv1.Spans, conv1.LLM, conv1.Input, conv1.Output, conv1.Cost = planner.Spans+1, planner.LLM+1, planner.Input+250000,
		planner.Output+1000, planner.Cost+goldentest.CostLongContext
	if rep.GroupsTotal != 2 || rep.Others == nil {
		t.Fatalf("by conversation, limit 1: %d groups, others %+v; want 2 and others", rep.GroupsTotal, rep.Others)
	}
	goldentest.CheckGroups(t, "by conversation, limit 1", rep, map[string]goldentest.GroupWant{"": none}, true)
	goldentest.CheckGroups(t, "by conversation, limit 1, others", query.CostReport{Groups: []query.CostGroup{*rep.Others}},
		map[string]goldentest.GroupWant{"": conv1}, true)
}

// checkTopAgainstAll checks the reports by by at every limit against the
// one that lists every group: the same first groups, the rest added up in
// others.
func checkTopAgainstAll(t *testing.T, by string, costs func(by string, limit int) query.CostReport) {
	t.Helper()
	all := costs(by, 5000)
	n := len(all.Groups)
	if n < 3 {
		t.Fatalf("by %s: %d groups, want at least 3 to list in part", by, n)
	}
	for limit := 1; limit <= n; limit++ {
		rep := costs(by, limit)
		want := map[string]goldentest.GroupWant{}
		for _, g := range all.Groups[:limit] {
			want[g.Key] = groupWant(g.CostTotals)
		}
		label := fmt.Sprintf("by %s, limit %d", by, limit)
		goldentest.CheckGroups(t, label, rep, want, true)
		for i, g := range rep.Groups {
			if g.Key != all.Groups[i].Key {
				t.Errorf("%s: group %d is %q, want %q", label, i, g.Key, all.Groups[i].Key)
			}
		}
		if rep.GroupsTotal != n || rep.Total.Spans != all.Total.Spans || !near(rep.Total.Cost.Total, all.Total.Cost.Total) {
			t.Errorf("%s: %d groups, total %d spans %v USD; want %d, %d, %v", label, rep.GroupsTotal, rep.Total.Spans,
				rep.Total.Cost.Total, n, all.Total.Spans, all.Total.Cost.Total)
		}
		if limit == n {
			if rep.Others != nil {
				t.Errorf("%s: others %+v, want none", label, rep.Others)
			}
			continue
		}
		var rest query.CostGroup
		for _, g := range all.Groups[limit:] {
			rest.Spans += g.Spans
			rest.LLMCalls += g.LLMCalls
			rest.ToolCalls += g.ToolCalls
			rest.ToolRetries += g.ToolRetries
			rest.ToolErrors += g.ToolErrors
			rest.Usage.Add(g.Usage)
			rest.Cost.Add(g.Cost)
			rest.RetryTaxUSD += g.RetryTaxUSD
			rest.UnpricedSpans += g.UnpricedSpans
			rest.ClientCostSpans += g.ClientCostSpans
		}
		if rep.Others == nil {
			t.Errorf("%s: no others, want %+v", label, rest.CostTotals)
			continue
		}
		goldentest.CheckGroups(t, label+", others", query.CostReport{Groups: []query.CostGroup{*rep.Others}},
			map[string]goldentest.GroupWant{"": groupWant(rest.CostTotals)}, true)
	}
}

// groupWant is what goldentest.CheckGroups compares of t.
func groupWant(t query.CostTotals) goldentest.GroupWant {
	return goldentest.GroupWant{Spans: t.Spans, LLM: t.LLMCalls, ToolCalls: t.ToolCalls, Retries: t.ToolRetries, Errors: t.ToolErrors,
		Input: t.Usage.Input, CacheRead: t.Usage.CacheRead, CacheWrite: t.Usage.CacheWrite, Output: t.Usage.Output,
		Cost: t.Cost.Total, Tax: t.RetryTaxUSD, Unpriced: t.UnpricedSpans, Client: t.ClientCostSpans}
}
