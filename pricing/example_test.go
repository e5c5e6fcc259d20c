package pricing_test

import (
	"fmt"
	"time"

	"github.com/tallyhq/tally/pricing"
	"github.com/tallyhq/tally/schema"
)

func ExampleCatalog_Apply() {
	catalog, err := pricing.Builtin()
	if err != nil {
		panic(err)
	}
	span := schema.Span{
		Provider:        "anthropic",
		Model:           "claude-sonnet-4-5-20250929",
		Start:           time.Date(2025, 11, 15, 10, 0, 0, 0, time.UTC),
		UsageMode:       schema.UsageAdditive,
		InputTokens:     1000, // cache included
		CacheReadTokens: 900,
		OutputTokens:    50,
	}
	catalog.Apply(&span)
	// 100 uncached × $3/M + 900 cache read × $0.30/M + 50 output × $15/M
	// = 0.0003 + 0.00027 + 0.00075 = 0.00132
	fmt.Printf("%s %s %s %.5f\n", span.CostSource, span.PriceEntry, span.PriceVersion, span.CostTotal)
	// Output: catalog anthropic/claude-sonnet-4-5 2025-09-29 0.00132
}

func ExampleNormalize() {
	fmt.Println(pricing.Normalize("us.anthropic.claude-sonnet-4-20250514-v1:0"))
	fmt.Println(pricing.Normalize("models/gemini-2.5-pro"))
	fmt.Println(pricing.Normalize("gpt-4o-mini-2024-07-18"))
	// Output:
	// claude-sonnet-4
	// gemini-2-5-pro
	// gpt-4o-mini
}
