package schema

import (
	"context"
	"time"
)

// The run rollup's tables.
const (
	// TableRunRollup holds, per hour of run starts, what the window
	// reports (tasks, caps) read of the hour's runs, added up (see
	// RunRollupRow): a report over a week reads a few thousand of these
	// rows instead of every run.
	TableRunRollup = "run_rollup_hourly"
	// TableRunRollupHours records each computation of an hour of
	// TableRunRollup and the state of the runs it was computed from (see
	// RunRollupHourRow).
	TableRunRollupHours = "run_rollup_hours"
)

// Run rollup grains: what a RunRollupRow adds up the hour's runs by,
// besides their class. A run counts once in its task's row and once in
// each of its agents' rows.
const (
	RunGrainTask    uint8 = 1 // task; agent and fingerprint empty
	RunGrainAgent   uint8 = 2 // task and agent (one row per agent of the run)
	RunGrainVersion uint8 = 3 // task and configuration fingerprint
	// The runs' tool steps (the safety review's), by task (and agent),
	// tool, terminal status and effect class: Fingerprint holds
	// RunStepKey, Runs the steps, Class is 0 and the measures are zero.
	RunGrainSteps      uint8 = 4
	RunGrainAgentSteps uint8 = 5
)

// RunStepKey is a steps row's Fingerprint: the tool, status and effect,
// NUL-separated.
func RunStepKey(tool, status, effect string) string { return tool + "\x00" + status + "\x00" + effect }

// RunMeasures name a run's measures a RunRollupRow holds, in the order of
// RunRollupRow.Measures: its steps (model and tool calls), input and
// output tokens, counted cost (USD), wall clock (ms), model calls, tool
// calls, active time (wall clock less approval waits, ms) and approval
// wait (ms).
var RunMeasures = []string{"steps", "tokens", "cost", "duration_ms", "llm_calls", "tool_calls", "active_ms", "wait_ms"}

// RunMeasure is one measure of a RunRollupRow's runs: exact sum, sum of
// squares and greatest value, and the values' log-bucket sketch
// (consistency.Sketch: keys and counts; zeros under the lowest key).
type RunMeasure struct {
	Sum, SumSq, Max float64
	Keys            []int16
	Counts          []uint64
}

// RunRollupRow adds up the runs of one project that started in Hour, of
// one key of its grain (Task, Agent) and one Class: how a run was graded
// (RunClass). Reports derive any grading from the classes: the runs that
// passed by their outcomes, or that did not fail, and so on.
//
// Each computation of an hour writes all its rows with one new Version,
// recorded in TableRunRollupHours with the fingerprint of the runs it
// read; readers take the rows of an hour's latest computation, and only
// while the hour's runs still have that fingerprint (package query).
type RunRollupRow struct {
	Project     string
	Hour        time.Time
	Grain       uint8
	Task        string
	Agent       string
	Fingerprint string // RunGrainVersion's configuration fingerprint, else empty
	Class       uint8
	Runs        uint64
	Waiting     uint64 // runs that waited for approval
	// FirstNs and LastNs are the earliest and latest run start; LastTrace
	// the latest run (the greater trace id of two that started together).
	FirstNs, LastNs uint64
	LastTrace       string
	Measures        [8]RunMeasure
	Version         uint64
}

// RunClass is the class of a run graded by its outcomes' verdict
// (verdict: 0 none, 1 passed, -1 failed) and its status.
func RunClass(verdict int8, failed bool) uint8 {
	c := uint8(0)
	switch {
	case verdict > 0:
		c = 2
	case verdict < 0:
		c = 4
	}
	if failed {
		c++
	}
	return c
}

// RunClassOf splits a class back into its verdict and status.
func RunClassOf(c uint8) (verdict int8, failed bool) {
	switch c / 2 {
	case 1:
		verdict = 1
	case 2:
		verdict = -1
	}
	return verdict, c%2 == 1
}

// RunRollupHourRow records one computation of one project's hour of the
// run rollup: the Version its rows were written with, and the fingerprint
// of what it read — the run table's rows of the hour (count, sum of their
// versions) and the outcomes posted for runs that may start in it (count,
// sum of versions, of the outcomes whose run_start is in the hour or the
// next: a run's start moves earlier by at most the trace window, an
// hour) — read before the computation.
type RunRollupHourRow struct {
	Project           string    `ch:"project"`
	Hour              time.Time `ch:"hour"`
	Version           uint64    `ch:"version"`
	Runs              uint64    `ch:"runs"`
	RunVersionSum     uint64    `ch:"run_version_sum"`
	Outcomes          uint64    `ch:"outcomes"`
	OutcomeVersionSum uint64    `ch:"outcome_version_sum"`
	ComputedAt        time.Time `ch:"computed_at"`
}

// RunRollupMeasureColumns are the columns of measure m (a RunMeasures
// name): sum, sum of squares, greatest, sketch keys and counts.
func RunRollupMeasureColumns(m string) (sum, sumSq, max, keys, counts string) {
	return m + "_sum", m + "_sumsq", m + "_max", m + "_keys", m + "_counts"
}

func runRollupColumns() []column[RunRollupRow] {
	cols := []column[RunRollupRow]{
		strCol("project", func(r *RunRollupRow) string { return r.Project }),
		timeCol("hour", func(r *RunRollupRow) time.Time { return r.Hour }),
		u8Col("grain", func(r *RunRollupRow) uint8 { return r.Grain }),
		lowCol("task", func(r *RunRollupRow) string { return r.Task }),
		lowCol("agent", func(r *RunRollupRow) string { return r.Agent }),
		strCol("fingerprint", func(r *RunRollupRow) string { return r.Fingerprint }),
		u8Col("class", func(r *RunRollupRow) uint8 { return r.Class }),
		u64Col("runs", func(r *RunRollupRow) uint64 { return r.Runs }),
		u64Col("waiting", func(r *RunRollupRow) uint64 { return r.Waiting }),
		u64Col("first_ns", func(r *RunRollupRow) uint64 { return r.FirstNs }),
		u64Col("last_ns", func(r *RunRollupRow) uint64 { return r.LastNs }),
		strCol("last_trace", func(r *RunRollupRow) string { return r.LastTrace }),
	}
	for i, m := range RunMeasures {
		sum, sumSq, mx, keys, counts := RunRollupMeasureColumns(m)
		cols = append(cols,
			f64Col(sum, func(r *RunRollupRow) float64 { return r.Measures[i].Sum }),
			f64Col(sumSq, func(r *RunRollupRow) float64 { return r.Measures[i].SumSq }),
			f64Col(mx, func(r *RunRollupRow) float64 { return r.Measures[i].Max }),
			i16sCol(keys, func(r *RunRollupRow) []int16 { return r.Measures[i].Keys }),
			u64sCol(counts, func(r *RunRollupRow) []uint64 { return r.Measures[i].Counts }))
	}
	return append(cols, u64Col("version", func(r *RunRollupRow) uint64 { return r.Version }))
}

var runRollupHourColumns = []column[RunRollupHourRow]{
	strCol("project", func(r *RunRollupHourRow) string { return r.Project }),
	timeCol("hour", func(r *RunRollupHourRow) time.Time { return r.Hour }),
	u64Col("version", func(r *RunRollupHourRow) uint64 { return r.Version }),
	u64Col("runs", func(r *RunRollupHourRow) uint64 { return r.Runs }),
	u64Col("run_version_sum", func(r *RunRollupHourRow) uint64 { return r.RunVersionSum }),
	u64Col("outcomes", func(r *RunRollupHourRow) uint64 { return r.Outcomes }),
	u64Col("outcome_version_sum", func(r *RunRollupHourRow) uint64 { return r.OutcomeVersionSum }),
	timeCol("computed_at", func(r *RunRollupHourRow) time.Time { return r.ComputedAt }),
}

// runRollupTable is the run rollup: sorted so that a report reads one
// project's rows of one grain over a range of hours as a key range, the
// computation's version in the key (an hour's rows of each computation
// stay apart until merged away, and readers pick one computation), and
// partitioned by day like the run table, so that retention drops an
// hour's rollup with its runs. Sharded by hour in cluster mode, so that
// one computation's rows are on one shard.
func runRollupTable(s *Store) tableDef {
	return tableDef{Name: TableRunRollup, Columns: columnDDL(runRollupColumns(), s.caps),
		Engine: engineSpec{"ReplacingMergeTree", "version"}, PartitionBy: "toYYYYMMDD(hour)",
		OrderBy: "(project, grain, hour, task, agent, fingerprint, class)", ShardBy: "toUInt32(hour)"}
}

// runRollupHoursTable is the record of computed hours, sharded like the
// rollup.
func runRollupHoursTable(s *Store) tableDef {
	return tableDef{Name: TableRunRollupHours, Columns: columnDDL(runRollupHourColumns, s.caps),
		Engine: engineSpec{"MergeTree", ""}, PartitionBy: "toYYYYMMDD(hour)",
		OrderBy: "(project, hour, version)", ShardBy: "toUInt32(hour)"}
}

// InsertRunRollup writes an hour's computation in one INSERT, so that it
// becomes visible at once (its record is written after it).
func (s *Store) InsertRunRollup(ctx context.Context, rows []RunRollupRow) error {
	if len(rows) == 0 {
		return nil
	}
	return insertColumns(ctx, s.conn, s.Table(TableRunRollup), runRollupColumns(), rows, nil, 0,
		newPartitioner(s.Capabilities(), func(r *RunRollupRow) time.Time { return r.Hour }))
}

// InsertRunRollupHours records computed hours of the run rollup.
func (s *Store) InsertRunRollupHours(ctx context.Context, rows []RunRollupHourRow) error {
	if len(rows) == 0 {
		return nil
	}
	return insertColumns(ctx, s.conn, s.Table(TableRunRollupHours), runRollupHourColumns, rows, nil, 0,
		newPartitioner(s.Capabilities(), func(r *RunRollupHourRow) time.Time { return r.Hour }))
}
