package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestMemoryBudgetShares: --memory-budget sets each limit not given
// itself to its share, worked out here by hand from the budget in bytes
// (512 MiB = 536,870,912; integer division first, as the code does), and
// a limit given itself is left alone.
func TestMemoryBudgetShares(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		name     string
		store    string
		args     []string
		limit    int64 // --memory-limit
		engine   int64 // --embedded-max-memory
		batch    int64
		inflight int64
		settings []string
		load     int
	}{
		{name: "embedded, the default budget", store: storeEmbedded,
			limit: 536870912 / 10 * 3, engine: 536870912, batch: 8 * mib, inflight: 32 * mib,
			settings: []string{"mark_cache_size=67108864", "primary_index_cache_size=16777216", "index_mark_cache_size=8388608", "text_index_postings_cache_size=16777216", "text_index_tokens_cache_size=8388608", "text_index_header_cache_size=4194304", "query_condition_cache_size=8388608", "compiled_expression_cache_size=8388608"},
			load:     26214}, // 536,870,912 / 20,480 = 26,214.4
		{name: "embedded, 256 MiB", store: storeEmbedded, args: []string{"--memory-budget", "268435456"},
			limit: 80530635, engine: 268435456, batch: 4 * mib, inflight: 16 * mib,
			settings: []string{"mark_cache_size=33554432", "primary_index_cache_size=8388608", "index_mark_cache_size=4194304", "text_index_postings_cache_size=8388608", "text_index_tokens_cache_size=4194304", "text_index_header_cache_size=2097152", "query_condition_cache_size=4194304", "compiled_expression_cache_size=4194304"},
			load:     13107},
		{name: "server store: today's 216 MiB for Go", store: storeClickHouse,
			limit: 216 * mib, engine: 1 << 30, batch: 16 * mib, inflight: 32 * mib, load: 26214},
		{name: "given limits win", store: storeEmbedded,
			args:  []string{"--memory-limit", "100000000", "--batch-bytes", "2000000", "--embedded-setting", "mark_cache_size=5000000"},
			limit: 100000000, engine: 536870912, batch: 2000000, inflight: 32 * mib,
			settings: []string{"mark_cache_size=5000000", "primary_index_cache_size=16777216", "index_mark_cache_size=8388608", "text_index_postings_cache_size=16777216", "text_index_tokens_cache_size=8388608", "text_index_header_cache_size=4194304", "query_condition_cache_size=8388608", "compiled_expression_cache_size=8388608"},
			load:     26214},
		{name: "128 MiB, the least budget", store: storeEmbedded, args: []string{"--memory-budget", "134217728"},
			limit: 13421772 * 3, engine: 134217728, batch: 2 * mib, inflight: 8 * mib,
			settings: []string{"mark_cache_size=16777216", "primary_index_cache_size=4194304", "index_mark_cache_size=2097152", "text_index_postings_cache_size=4194304", "text_index_tokens_cache_size=2097152", "text_index_header_cache_size=1048576", "query_condition_cache_size=2097152", "compiled_expression_cache_size=2097152"},
			load:     6553},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cfg serveConfig
			fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
			cfg.bind(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			if err := cfg.applyMemoryBudget(fs, tc.store); err != nil {
				t.Fatal(err)
			}
			got := []int64{cfg.MemoryLimit, cfg.Store.embeddedMaxMemory, cfg.Writer.MaxBatchBytes, cfg.Ingest.MaxInFlight}
			if want := []int64{tc.limit, tc.engine, tc.batch, tc.inflight}; !slices.Equal(got, want) {
				t.Errorf("memory limit, engine, batch bytes, in-flight bytes: %v, want %v", got, want)
			}
			if !slices.Equal(cfg.Store.embeddedSettings, tc.settings) {
				t.Errorf("engine settings %q, want %q", cfg.Store.embeddedSettings, tc.settings)
			}
			if cfg.MaxLoadSpans != tc.load {
				t.Errorf("spans a load: %d, want %d", cfg.MaxLoadSpans, tc.load)
			}
		})
	}
}

// TestMemoryBudgetFloor: a budget under 128 MiB is refused, naming it.
func TestMemoryBudgetFloor(t *testing.T) {
	var cfg serveConfig
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	cfg.bind(fs)
	if err := fs.Parse([]string{"--memory-budget", "134217727"}); err != nil {
		t.Fatal(err)
	}
	err := cfg.applyMemoryBudget(fs, storeEmbedded)
	if err == nil || !strings.Contains(err.Error(), "--memory-budget 134217727: want at least 134217728 (128 MiB)") {
		t.Fatalf("budget 1 byte under the floor: %v", err)
	}
}
