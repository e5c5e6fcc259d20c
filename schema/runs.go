package schema

import (
	"context"
	"slices"
	"time"
)

// The run table and its mark.
const (
	// TableRuns holds one row per settled run (see RunRow): what the run
	// list, tasks, versions, caps and the safety review read of a run,
	// computed once when the run went quiet instead of aggregated from its
	// spans at every read.
	TableRuns = "runs"
	// TableRunMarks holds the settler's marks (see RunMarkRow): how far
	// the run table reflects the spans.
	TableRunMarks = "run_marks"
)

// RunMarkSettled is the name of the mark that says through which span
// version the run table is complete (see RunMarkRow).
const RunMarkSettled = "settled"

// RunRow is one run as the settler computed it from its spans (package
// settle; the figures are package query's, the same code that answers a
// run's detail). A run is re-settled when a span of it is written after its
// row was computed (a late span, a duplicate, a reprice): the new row has a
// higher Version, and readers take the latest row of each run (FINAL).
//
// A row is keyed by (project, start, trace_id), so that a window's runs are
// a key range; a late span that starts before the run's start moves the
// run, and the settler then writes a row with Deleted set under the old
// key, so that the old row drops out of reads.
type RunRow struct {
	Project string    `ch:"project"`
	TraceID string    `ch:"trace_id"`
	Start   time.Time `ch:"start"` // the run's start, UTC, second precision
	StartNs uint64    `ch:"start_ns"`
	EndNs   uint64    `ch:"end_ns"`

	Name         string   `ch:"name"`      // the root span's name, else the earliest span's
	RootName     string   `ch:"root_name"` // the root span's name, "" without a root
	Task         string   `ch:"task"`      // task.name, else Name
	Service      string   `ch:"service"`
	Conversation string   `ch:"conversation_id"`
	User         string   `ch:"user_id"`
	Agents       []string `ch:"agents"` // sorted, distinct
	Models       []string `ch:"models"`
	Providers    []string `ch:"providers"`
	Tools        []string `ch:"tools"` // the tools called ("unknown" for a tool span without a name)
	// Names are the run's distinct span names (at most MaxRunNames), for
	// the run list's search.
	Names []string `ch:"names"`

	Failed           uint8   `ch:"failed"` // 1: the run's outcome is an error
	Spans            uint64  `ch:"spans"`
	LLMCalls         uint64  `ch:"llm_calls"`
	ToolCalls        uint64  `ch:"tool_calls"`
	Errors           uint64  `ch:"errors"`
	InputTokens      uint64  `ch:"input_tokens"`
	CacheReadTokens  uint64  `ch:"cache_read_tokens"`
	CacheWriteTokens uint64  `ch:"cache_write_tokens"`
	OutputTokens     uint64  `ch:"output_tokens"`
	ReasoningTokens  uint64  `ch:"reasoning_tokens"`
	CostTotal        float64 `ch:"cost_total"`
	CostInput        float64 `ch:"cost_input"`
	CostCacheRead    float64 `ch:"cost_cache_read"`
	CostCacheWrite   float64 `ch:"cost_cache_write"`
	CostOutput       float64 `ch:"cost_output"`
	// The counted cost by confidence (ConfidenceSpend): what is left of
	// CostTotal is spend whose spans were stored before tally rated costs.
	ConfidenceSpend
	FromAggregate uint8  `ch:"from_aggregate"`
	Unpriced      uint64 `ch:"unpriced_spans"`
	Unreconciled  uint64 `ch:"unreconciled_spans"`
	ToolRetries   uint64 `ch:"tool_retries"`
	ToolRepeats   uint64 `ch:"tool_repeats"`

	// Fingerprint identifies the run's configuration (models, prompts,
	// tools offered, instructions); Config is that configuration as JSON.
	Fingerprint string `ch:"fingerprint"`
	Config      string `ch:"config"`

	// The safety review: one entry per step (tool, terminal status,
	// effect class), one per signal (kind, tool), and the signals whole as
	// JSON; ActiveNs and WaitNs split the run's duration into work and
	// approval waits.
	StepTools    []string `ch:"step_tools"`
	StepStatuses []string `ch:"step_statuses"`
	StepEffects  []string `ch:"step_effects"`
	SignalKinds  []string `ch:"signal_kinds"`
	SignalTools  []string `ch:"signal_tools"`
	Signals      string   `ch:"signals"`
	ActiveNs     uint64   `ch:"active_ns"`
	WaitNs       uint64   `ch:"wait_ns"`
	// Outcomes are the evaluation results the run's spans carry, as JSON
	// (outcomes posted to the API are read from TableOutcomes); Verdicts
	// the pass/fail verdicts among them, "pass:<name>" or "fail:<name>" in
	// the same order, which is what grading a run reads.
	Outcomes string   `ch:"outcomes"`
	Verdicts []string `ch:"verdicts"`
	// Tree is, for a run of many spans, its tree as settled: the shape,
	// each span's figures over the whole run (counted flags, subtree
	// figures, retry and step classes) and the detail's summary, in
	// package query's encoding; empty for a smaller run. A big run's page
	// is answered in part from it and the rows of the spans it shows,
	// without reading the whole run, while MaxVersion and Review hold.
	Tree string `ch:"tree"`

	// MaxVersion is the highest span version the row reflects: a span of
	// the run with a higher one makes the row stale. Review identifies the
	// safety configuration the review ran under.
	MaxVersion uint64 `ch:"max_version"`
	Review     uint64 `ch:"review"`
	Deleted    uint8  `ch:"deleted"`
	Version    uint64 `ch:"version"`
}

// MaxRunNames bounds RunRow.Names.
const MaxRunNames = 500

// RunMarkRow is one value of a settler mark; the row of a name with the
// highest Version is its value. RunMarkSettled's Value is a span version
// through which every span is reflected in the run table (its run's row
// was computed after the span was written).
type RunMarkRow struct {
	Name    string `ch:"name"`
	Value   uint64 `ch:"value"`
	Version uint64 `ch:"version"`
}

var runColumns = slices.Concat([]column[RunRow]{
	strCol("project", func(r *RunRow) string { return r.Project }),
	strCol("trace_id", func(r *RunRow) string { return r.TraceID }),
	timeCol("start", func(r *RunRow) time.Time { return r.Start }),
	u64Col("start_ns", func(r *RunRow) uint64 { return r.StartNs }),
	u64Col("end_ns", func(r *RunRow) uint64 { return r.EndNs }),
	strCol("name", func(r *RunRow) string { return r.Name }),
	strCol("root_name", func(r *RunRow) string { return r.RootName }),
	lowCol("task", func(r *RunRow) string { return r.Task }),
	lowCol("service", func(r *RunRow) string { return r.Service }),
	strCol("conversation_id", func(r *RunRow) string { return r.Conversation }),
	strCol("user_id", func(r *RunRow) string { return r.User }),
	strsCol("agents", func(r *RunRow) []string { return r.Agents }),
	strsCol("models", func(r *RunRow) []string { return r.Models }),
	strsCol("providers", func(r *RunRow) []string { return r.Providers }),
	strsCol("tools", func(r *RunRow) []string { return r.Tools }),
	strsCol("names", func(r *RunRow) []string { return r.Names }),
	u8Col("failed", func(r *RunRow) uint8 { return r.Failed }),
	u64Col("spans", func(r *RunRow) uint64 { return r.Spans }),
	u64Col("llm_calls", func(r *RunRow) uint64 { return r.LLMCalls }),
	u64Col("tool_calls", func(r *RunRow) uint64 { return r.ToolCalls }),
	u64Col("errors", func(r *RunRow) uint64 { return r.Errors }),
	u64Col("input_tokens", func(r *RunRow) uint64 { return r.InputTokens }),
	u64Col("cache_read_tokens", func(r *RunRow) uint64 { return r.CacheReadTokens }),
	u64Col("cache_write_tokens", func(r *RunRow) uint64 { return r.CacheWriteTokens }),
	u64Col("output_tokens", func(r *RunRow) uint64 { return r.OutputTokens }),
	u64Col("reasoning_tokens", func(r *RunRow) uint64 { return r.ReasoningTokens }),
	f64Col("cost_total", func(r *RunRow) float64 { return r.CostTotal }),
	f64Col("cost_input", func(r *RunRow) float64 { return r.CostInput }),
	f64Col("cost_cache_read", func(r *RunRow) float64 { return r.CostCacheRead }),
	f64Col("cost_cache_write", func(r *RunRow) float64 { return r.CostCacheWrite }),
	f64Col("cost_output", func(r *RunRow) float64 { return r.CostOutput }),
}, confidenceSpendColumns(func(r *RunRow) *ConfidenceSpend { return &r.ConfidenceSpend }), []column[RunRow]{
	u8Col("from_aggregate", func(r *RunRow) uint8 { return r.FromAggregate }),
	u64Col("unpriced_spans", func(r *RunRow) uint64 { return r.Unpriced }),
	u64Col("unreconciled_spans", func(r *RunRow) uint64 { return r.Unreconciled }),
	u64Col("tool_retries", func(r *RunRow) uint64 { return r.ToolRetries }),
	u64Col("tool_repeats", func(r *RunRow) uint64 { return r.ToolRepeats }),
	strCol("fingerprint", func(r *RunRow) string { return r.Fingerprint }),
	strCol("config", func(r *RunRow) string { return r.Config }),
	strsCol("step_tools", func(r *RunRow) []string { return r.StepTools }),
	strsCol("step_statuses", func(r *RunRow) []string { return r.StepStatuses }),
	strsCol("step_effects", func(r *RunRow) []string { return r.StepEffects }),
	strsCol("signal_kinds", func(r *RunRow) []string { return r.SignalKinds }),
	strsCol("signal_tools", func(r *RunRow) []string { return r.SignalTools }),
	strCol("signals", func(r *RunRow) string { return r.Signals }),
	u64Col("active_ns", func(r *RunRow) uint64 { return r.ActiveNs }),
	u64Col("wait_ns", func(r *RunRow) uint64 { return r.WaitNs }),
	strCol("outcomes", func(r *RunRow) string { return r.Outcomes }),
	strsCol("verdicts", func(r *RunRow) []string { return r.Verdicts }),
	strCol("tree", func(r *RunRow) string { return r.Tree }),
	u64Col("max_version", func(r *RunRow) uint64 { return r.MaxVersion }),
	u64Col("review", func(r *RunRow) uint64 { return r.Review }),
	u8Col("deleted", func(r *RunRow) uint8 { return r.Deleted }),
	u64Col("version", func(r *RunRow) uint64 { return r.Version }),
})

var runMarkColumns = []column[RunMarkRow]{
	strCol("name", func(r *RunMarkRow) string { return r.Name }),
	u64Col("value", func(r *RunMarkRow) uint64 { return r.Value }),
	u64Col("version", func(r *RunMarkRow) uint64 { return r.Version }),
}

// RunColumnNames lists the run table's columns in RunRow's order, for
// reads that select whole rows.
func RunColumnNames() string { return columnNames(runColumns) }

// runsTable is the run table: ReplacingMergeTree on Version, sorted by
// (project, start, trace_id) so that a window of a project's runs is a key
// range, partitioned by the day of the run's start like the spans (so that
// retention drops a day's runs with the day's spans), and sharded by trace
// id like the spans, so that a run's row is on the shard that holds its
// spans. Index granularity 1,024 rows: a page of runs is read by key (the
// run list's second read), a small granule a run at worst.
func runsTable(s *Store) tableDef {
	return tableDef{Name: TableRuns, Columns: columnDDL(runColumns, s.caps),
		Engine: engineSpec{"ReplacingMergeTree", "version"}, PartitionBy: "toYYYYMMDD(start)",
		OrderBy: "(project, start, trace_id)", ShardBy: "cityHash64(trace_id)", IndexGranularity: runGranularity}
}

// runMarksTable holds the settler's marks, keyed by name like the leases.
func runMarksTable(s *Store) tableDef {
	return tableDef{Name: TableRunMarks, Columns: columnDDL(runMarkColumns, s.caps),
		Engine: engineSpec{"ReplacingMergeTree", "version"}, OrderBy: "name", ShardBy: "cityHash64(name)"}
}

// InsertRuns writes run rows in one INSERT (cut by partition).
func (s *Store) InsertRuns(ctx context.Context, rows []RunRow) error {
	if len(rows) == 0 {
		return nil
	}
	return insertColumns(ctx, s.conn, s.Table(TableRuns), runColumns, rows, nil, 0,
		newPartitioner(s.Capabilities(), func(r *RunRow) time.Time { return r.Start }))
}

// InsertRunMark writes one value of a settler mark.
func (s *Store) InsertRunMark(ctx context.Context, row RunMarkRow) error {
	return insertColumns(ctx, s.conn, s.Table(TableRunMarks), runMarkColumns, []RunMarkRow{row}, nil, 0, partitioner[RunMarkRow]{})
}
