package schema

import (
	"context"
	"slices"
	"time"
)

// Rollup table names.
const (
	// TableCostRollup holds hourly cost and token totals per dimension
	// combination (see CostRollupRow).
	TableCostRollup = "cost_rollup_hourly"
	// TableCostRollupHours records which hours of TableCostRollup have been
	// computed, and from what state of the spans table (see RollupHourRow).
	TableCostRollupHours = "cost_rollup_hours"
)

// Rollup grains: which dimension a CostRollupRow is keyed on. A row carries
// the value of its grain's dimension (GrainModel: provider and model) and
// leaves the other dimension columns empty. One grain per dimension keeps the
// rows a report reads few — an hour has as many agent rows as agents ran in
// it, however many tasks, models and tools they combined — at the price of
// writing each span's totals once per grain.
const (
	GrainAgent        uint8 = 1
	GrainModel        uint8 = 2 // provider and model
	GrainProvider     uint8 = 3
	GrainTask         uint8 = 4
	GrainService      uint8 = 5
	GrainTool         uint8 = 6
	GrainConversation uint8 = 7
	GrainUser         uint8 = 8
)

// CostRollupRow is one row of the hourly cost rollup: the totals of the
// (deduplicated) spans that started in Hour and share the row's value of its
// grain's dimension. Package rollup computes the rows; see rollup.Rollup for how and when.
//
// Each computation of an hour writes every key of the hour with one new
// Version, and a row with zero measures (a tombstone) for every key the hour
// no longer has, so the rows of an hour's highest version are its complete,
// current image: readers select them (no FINAL needed), and the engine
// (ReplacingMergeTree on Version) discards superseded rows as it merges.
type CostRollupRow struct {
	Project      string    `ch:"project"`
	Grain        uint8     `ch:"grain"`
	Hour         time.Time `ch:"hour"`
	Agent        string    `ch:"agent"`
	Model        string    `ch:"model"`
	Provider     string    `ch:"provider"`
	Task         string    `ch:"task"`
	Service      string    `ch:"service"`
	Tool         string    `ch:"tool"`
	Conversation string    `ch:"conversation_id"`
	User         string    `ch:"user_id"`

	Spans       uint64 `ch:"spans"`
	LLMCalls    uint64 `ch:"llm_calls"`
	ToolCalls   uint64 `ch:"tool_calls"`
	ToolRetries uint64 `ch:"tool_retries"`
	ToolErrors  uint64 `ch:"tool_errors"`

	InputTokens      uint64 `ch:"input_tokens"`
	CacheReadTokens  uint64 `ch:"cache_read_tokens"`
	CacheWriteTokens uint64 `ch:"cache_write_tokens"`
	OutputTokens     uint64 `ch:"output_tokens"`
	ReasoningTokens  uint64 `ch:"reasoning_tokens"`

	CostTotal      float64 `ch:"cost_total"`
	CostInput      float64 `ch:"cost_input"`
	CostCacheRead  float64 `ch:"cost_cache_read"`
	CostCacheWrite float64 `ch:"cost_cache_write"`
	CostOutput     float64 `ch:"cost_output"`
	// The cost by confidence (the rest of CostTotal is unrated spend).
	ConfidenceSpend

	UnpricedSpans        uint64  `ch:"unpriced_spans"`
	UnpricedInputTokens  uint64  `ch:"unpriced_input_tokens"`
	UnpricedOutputTokens uint64  `ch:"unpriced_output_tokens"`
	ClientCostSpans      uint64  `ch:"client_cost_spans"`
	RetryTaxUSD          float64 `ch:"retry_tax_usd"`
	RetryTaxCalls        uint64  `ch:"retry_tax_calls"`

	Version uint64 `ch:"version"`
}

// RollupHourRow records one computation of one hour of the cost rollup: the
// version its rows were written with, and the fingerprint of the spans
// table's rows in that hour (row count and sum of row versions, read before
// the computation) so that a later change to the hour — late spans, a
// duplicate, a reprice, a merge — is noticed and the hour recomputed.
type RollupHourRow struct {
	Hour          time.Time `ch:"hour"`
	Version       uint64    `ch:"version"`
	RawRows       uint64    `ch:"raw_rows"`
	RawVersionSum uint64    `ch:"raw_version_sum"`
	ComputedAt    time.Time `ch:"computed_at"`
}

var costRollupColumns = slices.Concat([]column[CostRollupRow]{
	strCol("project", func(r *CostRollupRow) string { return r.Project }),
	u8Col("grain", func(r *CostRollupRow) uint8 { return r.Grain }),
	timeCol("hour", func(r *CostRollupRow) time.Time { return r.Hour }),
	lowCol("agent", func(r *CostRollupRow) string { return r.Agent }),
	lowCol("model", func(r *CostRollupRow) string { return r.Model }),
	lowCol("provider", func(r *CostRollupRow) string { return r.Provider }),
	lowCol("task", func(r *CostRollupRow) string { return r.Task }),
	lowCol("service", func(r *CostRollupRow) string { return r.Service }),
	lowCol("tool", func(r *CostRollupRow) string { return r.Tool }),
	strCol("conversation_id", func(r *CostRollupRow) string { return r.Conversation }),
	strCol("user_id", func(r *CostRollupRow) string { return r.User }),
	u64Col("spans", func(r *CostRollupRow) uint64 { return r.Spans }),
	u64Col("llm_calls", func(r *CostRollupRow) uint64 { return r.LLMCalls }),
	u64Col("tool_calls", func(r *CostRollupRow) uint64 { return r.ToolCalls }),
	u64Col("tool_retries", func(r *CostRollupRow) uint64 { return r.ToolRetries }),
	u64Col("tool_errors", func(r *CostRollupRow) uint64 { return r.ToolErrors }),
	u64Col("input_tokens", func(r *CostRollupRow) uint64 { return r.InputTokens }),
	u64Col("cache_read_tokens", func(r *CostRollupRow) uint64 { return r.CacheReadTokens }),
	u64Col("cache_write_tokens", func(r *CostRollupRow) uint64 { return r.CacheWriteTokens }),
	u64Col("output_tokens", func(r *CostRollupRow) uint64 { return r.OutputTokens }),
	u64Col("reasoning_tokens", func(r *CostRollupRow) uint64 { return r.ReasoningTokens }),
	f64Col("cost_total", func(r *CostRollupRow) float64 { return r.CostTotal }),
	f64Col("cost_input", func(r *CostRollupRow) float64 { return r.CostInput }),
	f64Col("cost_cache_read", func(r *CostRollupRow) float64 { return r.CostCacheRead }),
	f64Col("cost_cache_write", func(r *CostRollupRow) float64 { return r.CostCacheWrite }),
	f64Col("cost_output", func(r *CostRollupRow) float64 { return r.CostOutput }),
}, confidenceSpendColumns(func(r *CostRollupRow) *ConfidenceSpend { return &r.ConfidenceSpend }), []column[CostRollupRow]{
	u64Col("unpriced_spans", func(r *CostRollupRow) uint64 { return r.UnpricedSpans }),
	u64Col("unpriced_input_tokens", func(r *CostRollupRow) uint64 { return r.UnpricedInputTokens }),
	u64Col("unpriced_output_tokens", func(r *CostRollupRow) uint64 { return r.UnpricedOutputTokens }),
	u64Col("client_cost_spans", func(r *CostRollupRow) uint64 { return r.ClientCostSpans }),
	f64Col("retry_tax_usd", func(r *CostRollupRow) float64 { return r.RetryTaxUSD }),
	u64Col("retry_tax_calls", func(r *CostRollupRow) uint64 { return r.RetryTaxCalls }),
	u64Col("version", func(r *CostRollupRow) uint64 { return r.Version }),
})

var rollupHourColumns = []column[RollupHourRow]{
	timeCol("hour", func(r *RollupHourRow) time.Time { return r.Hour }),
	u64Col("version", func(r *RollupHourRow) uint64 { return r.Version }),
	u64Col("raw_rows", func(r *RollupHourRow) uint64 { return r.RawRows }),
	u64Col("raw_version_sum", func(r *RollupHourRow) uint64 { return r.RawVersionSum }),
	timeCol("computed_at", func(r *RollupHourRow) time.Time { return r.ComputedAt }),
}

// costRollupTable is the hourly cost rollup. The sort key starts with
// (project, grain, hour) so that a report reads one project's rows of one
// grain over a time range as a key range; the dimensions complete the key so
// that a recomputation replaces each row. In cluster mode it is sharded by
// hour, so that all rows of one computation of an hour are on one shard (see
// cluster.go).
func costRollupTable(s *Store) tableDef {
	return tableDef{Name: TableCostRollup, Columns: columnDDL(costRollupColumns, s.caps),
		Engine: engineSpec{"ReplacingMergeTree", "version"}, PartitionBy: "toYYYYMM(hour)",
		OrderBy: "(project, grain, hour, agent, model, provider, task, service, tool, conversation_id, user_id)",
		ShardBy: "toUInt32(hour)"}
}

// rollupHoursTable is the record of computed rollup hours, sharded like the
// rollup.
func rollupHoursTable(s *Store) tableDef {
	return tableDef{Name: TableCostRollupHours, Columns: columnDDL(rollupHourColumns, s.caps),
		Engine: engineSpec{"ReplacingMergeTree", "version"}, PartitionBy: "toYYYYMM(hour)",
		OrderBy: "hour", ShardBy: "toUInt32(hour)"}
}

// InsertCostRollup writes cost rollup rows in one INSERT, so that a
// recomputed hour becomes visible at once.
func (s *Store) InsertCostRollup(ctx context.Context, rows []CostRollupRow) error {
	if len(rows) == 0 {
		return nil
	}
	return insertColumns(ctx, s.conn, s.Table(TableCostRollup), costRollupColumns, rows, nil, 0,
		newMonthPartitioner(s.Capabilities(), func(r *CostRollupRow) time.Time { return r.Hour }))
}

// InsertRollupHours records computed rollup hours.
func (s *Store) InsertRollupHours(ctx context.Context, rows []RollupHourRow) error {
	if len(rows) == 0 {
		return nil
	}
	return insertColumns(ctx, s.conn, s.Table(TableCostRollupHours), rollupHourColumns, rows, nil, 0,
		newMonthPartitioner(s.Capabilities(), func(r *RollupHourRow) time.Time { return r.Hour }))
}
