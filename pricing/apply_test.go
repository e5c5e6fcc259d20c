package pricing

import (
	"math"
	"testing"

	"github.com/tallyhq/tally/schema"
)

// costs are the expected cost fields of a priced span.
type costs struct {
	input, cacheRead, cacheWrite, output, total float64
}

// near reports whether got equals want within a relative 1e-12.
func near(got, want float64) bool {
	if want == 0 {
		return got == 0
	}
	return math.Abs(got-want) <= 1e-12*math.Abs(want)
}

func checkCosts(t *testing.T, name string, s schema.Span, want costs) {
	t.Helper()
	got := costs{s.CostInput, s.CostCacheRead, s.CostCacheWrite, s.CostOutput, s.CostTotal}
	if !near(got.input, want.input) || !near(got.cacheRead, want.cacheRead) || !near(got.cacheWrite, want.cacheWrite) ||
		!near(got.output, want.output) || !near(got.total, want.total) {
		t.Errorf("%s: costs %+v, want %+v", name, got, want)
	}
}

func TestApply(t *testing.T) {
	c := builtin(t)
	at := date("2025-11-15T10:00:00Z")
	tests := []struct {
		name        string
		span        schema.Span
		wantEntry   string
		wantVersion string
		want        costs
	}{
		{
			// gpt-4o: 500 uncached × $2.50/M + 1500 cache read × $1.25/M + 300 output × $10/M
			// = 0.00125 + 0.001875 + 0.003 = 0.006125
			name: "openai inclusive usage with cached tokens",
			span: schema.Span{Provider: "openai", Model: "gpt-4o-2024-08-06", UsageMode: schema.UsageInclusive,
				InputTokens: 2000, CacheReadTokens: 1500, OutputTokens: 300},
			wantEntry: "openai/gpt-4o", wantVersion: "2024-08-06",
			want: costs{0.00125, 0.001875, 0, 0.003, 0.006125},
		},
		{
			// claude-sonnet-4-5: 100 uncached × $3/M + 900 cache read × $0.30/M + 1000 write × $3.75/M
			// + 50 output × $15/M = 0.0003 + 0.00027 + 0.00375 + 0.00075 = 0.00507
			name: "anthropic usage with cache reads and writes",
			span: schema.Span{Provider: "anthropic", Model: "claude-sonnet-4-5-20250929", UsageMode: schema.UsageAdditive,
				InputTokens: 2000, CacheReadTokens: 900, CacheWriteTokens: 1000, OutputTokens: 50},
			wantEntry: "anthropic/claude-sonnet-4-5", wantVersion: "2025-09-29",
			want: costs{0.0003, 0.00027, 0.00375, 0.00075, 0.00507},
		},
		{
			// 200000 input is not above the 200k threshold: base prices.
			// 50000 uncached × $3/M + 150000 read × $0.30/M + 1000 output × $15/M = 0.15 + 0.045 + 0.015 = 0.21
			name: "long context just below the threshold",
			span: schema.Span{Provider: "anthropic", Model: "claude-sonnet-4-5", UsageMode: schema.UsageAdditive,
				InputTokens: 200000, CacheReadTokens: 150000, OutputTokens: 1000},
			wantEntry: "anthropic/claude-sonnet-4-5", wantVersion: "2025-09-29",
			want: costs{0.15, 0.045, 0, 0.015, 0.21},
		},
		{
			// 200001 input is above 200k: every token at the long-context rates.
			// 50001 uncached × $6/M + 150000 read × $0.60/M + 1000 output × $22.50/M
			// = 0.300006 + 0.09 + 0.0225 = 0.412506
			name: "long context just above the threshold",
			span: schema.Span{Provider: "anthropic", Model: "claude-sonnet-4-5", UsageMode: schema.UsageAdditive,
				InputTokens: 200001, CacheReadTokens: 150000, OutputTokens: 1000},
			wantEntry: "anthropic/claude-sonnet-4-5", wantVersion: "2025-09-29",
			want: costs{0.300006, 0.09, 0, 0.0225, 0.412506},
		},
		{
			// gemini-2.5-pro below 200k: 10000 × $1.25/M + 2000 output × $10/M = 0.0125 + 0.02 = 0.0325
			name: "gemini via models/ prefix, base tier",
			span: schema.Span{Provider: "gcp.gemini", Model: "models/gemini-2.5-pro", UsageMode: schema.UsageInclusive,
				InputTokens: 10000, OutputTokens: 2000},
			wantEntry: "gcp.gemini/gemini-2.5-pro", wantVersion: "2025-06-17",
			want: costs{0.0125, 0, 0, 0.02, 0.0325},
		},
		{
			// gemini-2.5-pro above 200k: 240000 uncached × $2.50/M + 10000 read × $0.25/M + 2000 output × $15/M
			// = 0.6 + 0.0025 + 0.03 = 0.6325
			name: "gemini via models/ prefix, long-context tier",
			span: schema.Span{Provider: "gcp.gemini", Model: "models/gemini-2.5-pro", UsageMode: schema.UsageInclusive,
				InputTokens: 250000, CacheReadTokens: 10000, OutputTokens: 2000},
			wantEntry: "gcp.gemini/gemini-2.5-pro", wantVersion: "2025-06-17",
			want: costs{0.6, 0.0025, 0, 0.03, 0.6325},
		},
		{
			// claude-3-5-sonnet on Bedrock: 1000 × $3/M + 100 output × $15/M = 0.003 + 0.0015 = 0.0045
			name: "bedrock model id",
			span: schema.Span{Provider: "aws.bedrock", Model: "anthropic.claude-3-5-sonnet-20240620-v1:0",
				UsageMode: schema.UsageAdditive, InputTokens: 1000, OutputTokens: 100},
			wantEntry: "aws.bedrock/claude-3-5-sonnet", wantVersion: "2024-06-20",
			want: costs{0.003, 0, 0, 0.0015, 0.0045},
		},
		{
			// claude-sonnet-4 on Bedrock, cross-region profile: 1000 uncached × $3/M + 4000 read × $0.30/M
			// + 200 output × $15/M = 0.003 + 0.0012 + 0.003 = 0.0072
			name: "bedrock cross-region inference profile",
			span: schema.Span{Provider: "aws.bedrock", Model: "us.anthropic.claude-sonnet-4-20250514-v1:0",
				UsageMode: schema.UsageAdditive, InputTokens: 5000, CacheReadTokens: 4000, OutputTokens: 200},
			wantEntry: "aws.bedrock/claude-sonnet-4", wantVersion: "2025-05-22",
			want: costs{0.003, 0.0012, 0, 0.003, 0.0072},
		},
		{
			// claude-sonnet-4-5 on Vertex AI: 1000 write × $3.75/M + 1000 uncached × $3/M + 10 output × $15/M
			// = 0.00375 + 0.003 + 0.00015 = 0.0069
			name: "vertex model name",
			span: schema.Span{Provider: "gcp.vertex_ai", Model: "claude-sonnet-4-5@20250929",
				UsageMode: schema.UsageAdditive, InputTokens: 2000, CacheWriteTokens: 1000, OutputTokens: 10},
			wantEntry: "gcp.vertex_ai/claude-sonnet-4-5", wantVersion: "2025-09-29",
			want: costs{0.003, 0, 0.00375, 0.00015, 0.0069},
		},
		{
			// gpt-4o: 1000 × $2.50/M + 1000 output × $10/M = 0.0025 + 0.01 = 0.0125
			name: "provider-prefixed name",
			span: schema.Span{Provider: "openai", Model: "openai/gpt-4o", UsageMode: schema.UsageInclusive,
				InputTokens: 1000, OutputTokens: 1000},
			wantEntry: "openai/gpt-4o", wantVersion: "2024-08-06",
			want: costs{0.0025, 0, 0, 0.01, 0.0125},
		},
		{
			// gpt-4o-mini, not gpt-4o: 1000 × $0.15/M + 1000 output × $0.60/M = 0.00015 + 0.0006 = 0.00075
			// (gpt-4o would have cost 0.0125)
			name: "dated mini is not the larger model",
			span: schema.Span{Provider: "openai", Model: "gpt-4o-mini-2024-07-18", UsageMode: schema.UsageInclusive,
				InputTokens: 1000, OutputTokens: 1000},
			wantEntry: "openai/gpt-4o-mini", wantVersion: "2024-07-18",
			want: costs{0.00015, 0, 0, 0.0006, 0.00075},
		},
		{
			// o3 after the 2025-06-10 cut; output includes the 400 reasoning tokens:
			// 1000 × $2/M + 500 output × $8/M = 0.002 + 0.004 = 0.006
			name: "reasoning tokens are part of output",
			span: schema.Span{Provider: "openai", Model: "o3-2025-04-16", UsageMode: schema.UsageInclusive,
				InputTokens: 1000, OutputTokens: 500, ReasoningTokens: 400},
			wantEntry: "openai/o3", wantVersion: "2025-06-10",
			want: costs{0.002, 0, 0, 0.004, 0.006},
		},
		{
			// text-embedding-3-small: 10000 × $0.02/M = 0.0002
			name: "embedding",
			span: schema.Span{Provider: "openai", Model: "text-embedding-3-small", UsageMode: schema.UsageInclusive,
				InputTokens: 10000},
			wantEntry: "openai/text-embedding-3-small", wantVersion: "2024-01-25",
			want: costs{0.0002, 0, 0, 0, 0.0002},
		},
		{
			// No Model: the request model prices it. gpt-4.1-nano: 1000 × $0.10/M + 100 × $0.40/M
			// = 0.0001 + 0.00004 = 0.00014
			name: "request model when no model",
			span: schema.Span{Provider: "openai", RequestModel: "gpt-4.1-nano", UsageMode: schema.UsageInclusive,
				InputTokens: 1000, OutputTokens: 100},
			wantEntry: "openai/gpt-4.1-nano", wantVersion: "2025-04-14",
			want: costs{0.0001, 0, 0, 0.00004, 0.00014},
		},
		{
			// Cache tokens exceed input (unreconciled): uncached input floors at 0.
			// claude-sonnet-4-5: 300 read × $0.30/M = 0.00009
			name: "unreconciled buckets",
			span: schema.Span{Provider: "anthropic", Model: "claude-sonnet-4-5", UsageMode: schema.UsageInclusive,
				InputTokens: 100, CacheReadTokens: 300},
			wantEntry: "anthropic/claude-sonnet-4-5", wantVersion: "2025-09-29",
			want: costs{0, 0.00009, 0, 0, 0.00009},
		},
	}
	for _, tt := range tests {
		s := tt.span
		s.Start = at
		c.Apply(&s)
		if s.CostSource != schema.CostCatalog || s.PriceEntry != tt.wantEntry || s.PriceVersion != tt.wantVersion {
			t.Errorf("%s: source %q entry %q version %q, want %q %q %q", tt.name, s.CostSource, s.PriceEntry,
				s.PriceVersion, schema.CostCatalog, tt.wantEntry, tt.wantVersion)
		}
		checkCosts(t, tt.name, s, tt.want)

		again := s
		c.Apply(&again)
		if again.CostTotal != s.CostTotal || again.PriceEntry != s.PriceEntry {
			t.Errorf("%s: applying twice changed the span: total %v → %v", tt.name, s.CostTotal, again.CostTotal)
		}
	}
}

func TestApplyUsesThePriceInForceWhenTheSpanRan(t *testing.T) {
	c := builtin(t)
	tests := []struct {
		name        string
		start       schema.Span
		wantVersion string
		want        costs
	}{
		{
			// deepseek-chat before 2025-09-05 16:00 UTC: 2000 uncached × $0.27/M + 8000 read × $0.07/M
			// + 1000 output × $1.10/M = 0.00054 + 0.00056 + 0.0011 = 0.0022
			name:        "before the change",
			start:       schema.Span{Start: date("2025-09-01T12:00:00Z")},
			wantVersion: "2025-02-09",
			want:        costs{0.00054, 0.00056, 0, 0.0011, 0.0022},
		},
		{
			// after: 2000 × $0.56/M + 8000 × $0.07/M + 1000 × $1.68/M = 0.00112 + 0.00056 + 0.00168 = 0.00336
			name:        "after the change",
			start:       schema.Span{Start: date("2025-09-10T12:00:00Z")},
			wantVersion: "2025-09-05",
			want:        costs{0.00112, 0.00056, 0, 0.00168, 0.00336},
		},
		{
			// Start unset: the nanosecond start time decides (2025-10-01 → the 2025-09-29 prices).
			// 2000 × $0.28/M + 8000 × $0.028/M + 1000 × $0.42/M = 0.00056 + 0.000224 + 0.00042 = 0.001204
			name:        "start from nanoseconds",
			start:       schema.Span{StartNs: uint64(date("2025-10-01").UnixNano())},
			wantVersion: "2025-09-29",
			want:        costs{0.00056, 0.000224, 0, 0.00042, 0.001204},
		},
	}
	for _, tt := range tests {
		s := tt.start
		s.Provider, s.Model, s.UsageMode = "deepseek", "deepseek-chat", schema.UsageInclusive
		s.InputTokens, s.CacheReadTokens, s.OutputTokens = 10000, 8000, 1000
		c.Apply(&s)
		if s.PriceEntry != "deepseek/deepseek-chat" || s.PriceVersion != tt.wantVersion {
			t.Errorf("%s: entry %q version %q, want deepseek/deepseek-chat %q", tt.name, s.PriceEntry, s.PriceVersion, tt.wantVersion)
		}
		checkCosts(t, tt.name, s, tt.want)
	}
}

func TestApplyUnknownModelIsUnpriced(t *testing.T) {
	c := builtin(t)
	// A span that was priced before (say, under an override since removed) is reset.
	s := schema.Span{Provider: "openai", Model: "my-finetune-xyz", UsageMode: schema.UsageInclusive,
		InputTokens: 1000, OutputTokens: 100, Start: date("2025-11-15"),
		CostInput: 1, CostOutput: 1, CostTotal: 2, CostSource: schema.CostCatalog, PriceEntry: "old", PriceVersion: "old"}
	c.Apply(&s)
	if s.CostSource != schema.CostUnpriced || s.PriceEntry != "" || s.PriceVersion != "" {
		t.Errorf("source %q entry %q version %q, want %q and no entry", s.CostSource, s.PriceEntry, s.PriceVersion, schema.CostUnpriced)
	}
	checkCosts(t, "unknown model", s, costs{})
}

// Aggregated usage (an agent span repeating its children's) is priced like
// any other: readers count it only for a run whose inference spans carry no
// usage, and then its cost is the run's cost.
func TestApplyPricesAggregatedUsage(t *testing.T) {
	c := builtin(t)
	s := schema.Span{Provider: "anthropic", Model: "claude-sonnet-4-5", UsageMode: schema.UsageAggregated,
		InputTokens: 5000, OutputTokens: 500, Start: date("2026-06-01")}
	c.Apply(&s)
	// 5000 × $3/M + 500 × $15/M = 0.015 + 0.0075.
	if s.CostSource != schema.CostCatalog || math.Abs(s.CostTotal-0.0225) > 1e-12 {
		t.Errorf("source %q total %v, want catalog 0.0225", s.CostSource, s.CostTotal)
	}
}

func TestApplyLeavesSpansAlone(t *testing.T) {
	c := builtin(t)
	tests := []struct {
		name string
		span schema.Span
	}{
		{"client-sent cost", schema.Span{Provider: "openai", Model: "gpt-4o", UsageMode: schema.UsageInclusive,
			InputTokens: 1000, OutputTokens: 100, CostTotal: 0.42, CostSource: schema.CostClient}},
		{"client-sent cost for an unknown model", schema.Span{Provider: "acme", Model: "unknown", UsageMode: schema.UsageInclusive,
			InputTokens: 1000, CostTotal: 0.42, CostSource: schema.CostClient}},
		{"no usage", schema.Span{Provider: "openai", Model: "gpt-4o"}},
	}
	for _, tt := range tests {
		s := tt.span
		c.Apply(&s)
		if s.CostSource != tt.span.CostSource || s.CostTotal != tt.span.CostTotal || s.CostInput != 0 ||
			s.CostOutput != 0 || s.PriceEntry != "" {
			t.Errorf("%s: span changed: source %q total %v input %v output %v entry %q", tt.name, s.CostSource,
				s.CostTotal, s.CostInput, s.CostOutput, s.PriceEntry)
		}
	}
	c.Apply(nil) // must not panic
}
