package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
)

// defaultMemoryBudget is --memory-budget's default: what a tally on the
// embedded store, the engine in its process, is sized to stay within under
// twice its sustainable ingest rate.
const defaultMemoryBudget = 512 << 20

// minMemoryBudget is the smallest --memory-budget taken: below it the
// engine's code and caches alone would not fit.
const minMemoryBudget = 128 << 20

// budgetShare is one limit --memory-budget sets: a flag (or, for the
// embedded engine's caches, an --embedded-setting) that takes budget ×
// num / den unless it was given itself.
type budgetShare struct {
	flag    string // the flag, or "" for an engine setting
	setting string // the engine setting (embedded store only), when flag is ""
	num     int64  // the share is budget × num / den
	den     int64
	store   string // the store kind it applies to (storeEmbedded, storeClickHouse), or "" for both
}

// budgetShares are the limits --memory-budget scales, in the order the
// configuration reference lists them. On the embedded store the Go
// runtime, the engine's working memory and its caches share the budget
// (the engine's code pages, file-backed and reclaimable, come on top); on
// a server store the Go runtime has the process to itself, so it gets the
// share of today's 216 MiB default of 512, and the drain's batches keep
// their 16 MiB (a server store streams its INSERTs, in batches of
// --wal-stream-batch-bytes).
var budgetShares = []budgetShare{
	{flag: "memory-limit", num: 3, den: 10, store: storeEmbedded},
	{flag: "memory-limit", num: 27, den: 64, store: storeClickHouse},
	// The engine's cap is a ceiling for its statements, not a share it
	// takes: at two fifths (205 MiB) the safety review of 7 days of a
	// 10M-span store failed on it, and its memory under ingest is what the
	// other shares bound.
	{flag: "embedded-max-memory", num: 1, den: 1, store: storeEmbedded},
	{setting: "mark_cache_size", num: 1, den: 8, store: storeEmbedded},
	{setting: "primary_index_cache_size", num: 1, den: 32, store: storeEmbedded},
	{setting: "index_mark_cache_size", num: 1, den: 64, store: storeEmbedded},
	// The engine's other caches that grow with reads (the content's text
	// index, under search; the query condition cache; compiled
	// expressions): a cache gives memory back only past its own size, and
	// their defaults (1–2 GiB for the text index) exceed the whole budget.
	{setting: "text_index_postings_cache_size", num: 1, den: 32, store: storeEmbedded},
	{setting: "text_index_tokens_cache_size", num: 1, den: 64, store: storeEmbedded},
	{setting: "text_index_header_cache_size", num: 1, den: 128, store: storeEmbedded},
	{setting: "query_condition_cache_size", num: 1, den: 64, store: storeEmbedded},
	{setting: "compiled_expression_cache_size", num: 1, den: 64, store: storeEmbedded},
	{flag: "batch-bytes", num: 1, den: 64, store: storeEmbedded},
	{flag: "max-inflight-bytes", num: 1, den: 16},
}

// budgetBytesPerLoadSpan is the bytes of --memory-budget that let one load
// of the settler or of the cost rollup hold one more span: a loaded span
// takes 0.5–1 KB while it is attributed, and a load may take a twentieth
// of the budget (26,214 spans at 512 MiB, 6,553 at the least budget).
const budgetBytesPerLoadSpan = 20 << 10

// applyMemoryBudget sets every limit budgetShares names that was not
// given itself (on the command line, in TALLY_*, in tally.yaml) to its
// share of --memory-budget, and the loads of the settler and the rollup.
// store is the store kind (storeEmbedded or storeClickHouse).
func (c *serveConfig) applyMemoryBudget(fs *pflag.FlagSet, store string) error {
	b := c.MemoryBudget
	if b < minMemoryBudget {
		return fmt.Errorf("--memory-budget %d: want at least %d (128 MiB)", b, minMemoryBudget)
	}
	given := map[string]bool{}
	for _, kv := range c.Store.embeddedSettings {
		if k, _, ok := strings.Cut(kv, "="); ok {
			given[strings.TrimSpace(k)] = true
		}
	}
	for _, sh := range budgetShares {
		if sh.store != "" && sh.store != store {
			continue
		}
		v := strconv.FormatInt(b/sh.den*sh.num, 10)
		switch {
		case sh.flag != "" && !fs.Changed(sh.flag):
			if err := fs.Set(sh.flag, v); err != nil {
				return fmt.Errorf("--memory-budget: set --%s: %w", sh.flag, err)
			}
		case sh.setting != "" && !given[sh.setting]:
			c.Store.embeddedSettings = append(c.Store.embeddedSettings, sh.setting+"="+v)
		}
	}
	c.MaxLoadSpans = int(b / budgetBytesPerLoadSpan)
	return nil
}
