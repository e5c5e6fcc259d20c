package schema

import (
	"context"
	"time"
)

// TableOutcomes holds the outcomes posted for runs (POST
// /api/v1/runs/{trace_id}/outcomes, tally outcome): an evaluator's or a
// reviewer's verdict arriving after the run. Outcomes carried by the spans
// themselves (gen_ai.evaluation.* attributes and events) stay on the spans
// and are read from there (package query). Its rows are written here and
// read by package query.
const TableOutcomes = "outcomes"

// Outcome verdicts (Outcome.Passed).
const (
	VerdictNone   int8 = -1 // a score or label without pass/fail
	VerdictFailed int8 = 0
	VerdictPassed int8 = 1
)

// Outcome is one outcome of a run (SpanID empty) or of one of its spans.
// Its identity is (project, trace, span, name, source): posting the same
// outcome again replaces it (the highest Version wins), so evaluators may
// retry.
type Outcome struct {
	Project     string    `ch:"project"`
	TraceID     string    `ch:"trace_id"`
	SpanID      string    `ch:"span_id"`
	Name        string    `ch:"name"`
	Source      string    `ch:"source"`
	Score       float64   `ch:"score"`
	HasScore    uint8     `ch:"has_score"`
	Label       string    `ch:"label"`
	Passed      int8      `ch:"passed"` // Verdict*
	Explanation string    `ch:"explanation"`
	RunStart    time.Time `ch:"run_start"` // the run's first span start (partition key)
	CreatedAt   time.Time `ch:"created_at"`
	Version     uint64    `ch:"version"` // unix nanoseconds of the post
}

var outcomeColumns = []column[Outcome]{
	strCol("project", func(r *Outcome) string { return r.Project }),
	strCol("trace_id", func(r *Outcome) string { return r.TraceID }),
	strCol("span_id", func(r *Outcome) string { return r.SpanID }),
	strCol("name", func(r *Outcome) string { return r.Name }),
	strCol("source", func(r *Outcome) string { return r.Source }),
	f64Col("score", func(r *Outcome) float64 { return r.Score }),
	u8Col("has_score", func(r *Outcome) uint8 { return r.HasScore }),
	strCol("label", func(r *Outcome) string { return r.Label }),
	i8Col("passed", func(r *Outcome) int8 { return r.Passed }),
	strCol("explanation", func(r *Outcome) string { return r.Explanation }),
	timeCol("run_start", func(r *Outcome) time.Time { return r.RunStart }),
	timeCol("created_at", func(r *Outcome) time.Time { return r.CreatedAt }),
	u64Col("version", func(r *Outcome) uint64 { return r.Version }),
}

// outcomesTable is the outcomes table: ReplacingMergeTree keyed by the
// outcome's identity, partitioned by the run's month (outcomes are read
// run by run, for the runs of a time range), sharded by trace id like the
// spans.
func outcomesTable(s *Store) tableDef {
	return tableDef{Name: TableOutcomes, Columns: columnDDL(outcomeColumns, s.caps),
		Engine: engineSpec{"ReplacingMergeTree", "version"}, PartitionBy: "toYYYYMM(run_start)",
		OrderBy: "(project, trace_id, name, source, span_id)", ShardBy: "cityHash64(trace_id)"}
}

// InsertOutcomes writes outcome rows.
func (s *Store) InsertOutcomes(ctx context.Context, rows []Outcome) error {
	return insertColumns(ctx, s.conn, s.Table(TableOutcomes), outcomeColumns, rows, nil, 0,
		newMonthPartitioner(s.Capabilities(), func(r *Outcome) time.Time { return r.RunStart }))
}
