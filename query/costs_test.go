package query_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tallyhq/tally/query"
	"github.com/tallyhq/tally/rollup"
	"github.com/tallyhq/tally/schema"
)

// Prices used below, USD per million tokens, from pricing/catalog.yaml:
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
	costGPT4o = 0.00475
	// Anthropic additive: input 100 without cache, cache read 2000, cache
	// write 500 (stored input 2600), output 400.
	// (100×3 + 2000×0.30 + 500×3.75 + 400×15)/1e6 = (300 + 600 + 1875 + 6000)/1e6
	costClaudeAdditive = 0.008775
	// The solo run's only usage is its agent span (gpt-4o-mini): 500 in, 50 out.
	// (500×0.15 + 50×0.60)/1e6 = (75 + 30)/1e6
	costSolo = 0.000105
	// Vercel ai.* usage, provider-prefixed model: 1000 in, 200 out.
	// (1000×0.15 + 200×0.60)/1e6 = (150 + 120)/1e6
	costVercelMini = 0.00027
	// OpenInference llm.token_count.*: 5000 in of which 4000 cache read, 1000 out.
	// (1000×2 + 4000×0.50 + 1000×8)/1e6 = (2000 + 2000 + 8000)/1e6
	costOpenInference = 0.012
	// Long-context tier: 250000 in (> 200000), 1000 out, all at tier prices.
	// (250000×6 + 1000×22.50)/1e6 = (1500000 + 22500)/1e6
	costLongContext = 1.5225
	// Bedrock name of Claude 3.5 Haiku: 2000 in, 100 out.
	// (2000×0.80 + 100×4)/1e6 = (1600 + 400)/1e6
	costBedrockHaiku = 0.002
	// Client-sent cost on an unknown model.
	costClient = 0.0123
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
		"0000000000000102": {schema.CostCatalog, "openai/gpt-4o", costGPT4o, 1200},
		"0000000000000104": {schema.CostCatalog, "anthropic/claude-sonnet-4-5", costClaudeAdditive, 2600},
		"0000000000000201": {schema.CostCatalog, "openai/gpt-4o-mini", costVercelMini, 1000},
		"0000000000000202": {schema.CostCatalog, "openai/gpt-4o-mini", costVercelMini, 1000},
		"0000000000000302": {schema.CostCatalog, "openai/gpt-4.1", costOpenInference, 5000},
		"0000000000000303": {schema.CostCatalog, "anthropic/claude-sonnet-4-5", costLongContext, 250000},
		"0000000000000402": {schema.CostUnpriced, "", 0, 100},
		"0000000000000403": {schema.CostClient, "", costClient, 10},
		"0000000000000404": {schema.CostCatalog, "aws.bedrock/claude-3-5-haiku", costBedrockHaiku, 2000},
		"0000000000000501": {schema.CostCatalog, "openai/gpt-4o-mini", costSolo, 500},
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

// expected group totals of the golden corpus, by dimension and key.
type groupWant struct {
	spans, llm, toolCalls, retries, errors uint64
	input, cacheRead, cacheWrite, output   uint64
	cost, tax                              float64
	unpriced, client                       uint64
}

var goldenByAgent = map[string]groupWant{
	// 5 spans; usage from the two chats only (the agent span repeats them):
	// input 1200+2600, cache read 1000+2000, write 500, output 300+400.
	// The Claude call between the failed search and its retry is retry tax.
	"planner": {spans: 5, llm: 2, toolCalls: 2, retries: 1, errors: 1, input: 3800, cacheRead: 3000,
		cacheWrite: 500, output: 700, cost: costGPT4o + costClaudeAdditive, tax: costClaudeAdditive},
	"summarizer": {spans: 2, llm: 1, input: 1000, output: 200, cost: costVercelMini},
	// input 5000+250000, cache read 4000, output 1000+1000.
	"researcher": {spans: 3, llm: 2, input: 255000, cacheRead: 4000, output: 2000, cost: costOpenInference + costLongContext},
	// input 100+10+2000, output 50+5+100.
	"experimenter": {spans: 4, llm: 3, input: 2110, output: 155, cost: costClient + costBedrockHaiku, unpriced: 1, client: 1},
	// only aggregated usage in the run: the agent span's counts, and is priced.
	"solo": {spans: 1, input: 500, output: 50, cost: costSolo},
}

var goldenByTask = map[string]groupWant{
	"plan-trip":                 goldenByAgent["planner"],
	"ai.generateText":           goldenByAgent["summarizer"],
	"research":                  goldenByAgent["researcher"],
	"invoke_agent experimenter": goldenByAgent["experimenter"],
	"invoke_agent solo":         goldenByAgent["solo"],
}

var goldenByTool = map[string]groupWant{
	// the two search calls and the Claude call charged to the retry.
	"search": {spans: 3, llm: 1, toolCalls: 2, retries: 1, errors: 1, input: 2600, cacheRead: 2000,
		cacheWrite: 500, output: 400, cost: costClaudeAdditive, tax: costClaudeAdditive},
}

// goldenTotalCost is every priced span: the sum of the agents' costs.
const goldenTotalCost = costGPT4o + costClaudeAdditive + costVercelMini + costOpenInference + costLongContext + costClient + costBedrockHaiku + costSolo

func checkGroups(t *testing.T, label string, rep query.CostReport, wants map[string]groupWant, exhaustive bool) {
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
		ok = g.Spans == w.spans && g.LLMCalls == w.llm && g.ToolCalls == w.toolCalls && g.ToolRetries == w.retries &&
			g.ToolErrors == w.errors && g.Usage.Input == w.input && g.Usage.CacheRead == w.cacheRead &&
			g.Usage.CacheWrite == w.cacheWrite && g.Usage.Output == w.output && near(g.Cost.Total, w.cost) &&
			near(g.RetryTaxUSD, w.tax) && g.UnpricedSpans == w.unpriced && g.ClientCostSpans == w.client
		if !ok {
			t.Errorf("%s %q:\n got %+v\nwant %+v", label, key, g.CostTotals, w)
		}
	}
}

func checkGolden(t *testing.T, r *query.Reader, since, until time.Time, wantRolled int) {
	t.Helper()
	ctx := context.Background()
	for _, tc := range []struct {
		by         string
		wants      map[string]groupWant
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
		checkGroups(t, "by "+tc.by, rep, tc.wants, tc.exhaustive)
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
	checkGroups(t, "by model", rep, map[string]groupWant{
		"gpt-4o-2024-08-06":          {spans: 1, llm: 1, input: 1200, cacheRead: 1000, output: 300, cost: costGPT4o},
		"claude-sonnet-4-5-20250929": {spans: 1, llm: 1, input: 2600, cacheRead: 2000, cacheWrite: 500, output: 400, cost: costClaudeAdditive, tax: costClaudeAdditive},
		"gpt-4.1":                    {spans: 1, llm: 1, input: 5000, cacheRead: 4000, output: 1000, cost: costOpenInference},
		"claude-sonnet-4-5":          {spans: 1, llm: 1, input: 250000, output: 1000, cost: costLongContext},
		"acme-large-2":               {spans: 1, llm: 1, input: 100, output: 50, unpriced: 1},
		"acme-mini":                  {spans: 1, llm: 1, input: 10, output: 5, cost: costClient, client: 1},
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
	checkGroups(t, "mixed by agent", rep, goldenByAgent, true)
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
