package query

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/tallyhq/tally/safety"
	"github.com/tallyhq/tally/schema"
)

// The reads package settle needs to keep the run table (schema.TableRuns)
// current: which runs' rows are stale, and the rows their spans make now —
// computed by the same code that answers a run's detail (runDetail, the
// safety review, the configuration and the approvals), so that a settled
// run and its detail never disagree.

// SettleSource is what the settler reads.
type SettleSource struct{ *core }

// RunReach is how long before a span the run it belongs to may have
// started, for the reads that look a run's row up from one of its spans. A
// run longer than this is still settled right, but it is re-settled at
// every full check of the settler (docs/operations.md, the run table).
const RunReach = 24 * time.Hour

// StaleRun is a run whose row in the run table is missing or older than
// one of its spans, or was reviewed under another safety configuration.
type StaleRun struct {
	Project, TraceID string
	// The versions and latest end of the run's spans that were read
	// (those starting in the range checked, newer than the mark given).
	MinVersion, MaxVersion, MaxEndNs uint64
	// Rows counts the span rows read (unmerged duplicates included): a
	// bound on what loading the run holds.
	Rows uint64
	// RowStarts are the starts (second) of the run's current rows within
	// RunReach before the range: one, or none when it has no row — or
	// more, a row a build before 2026-12-07 wrote for a run longer than
	// RunReach from its later spans alone, which the settle withdraws.
	RowStarts []time.Time
}

// StaleRuns lists the runs that have a span starting in [from, to) with a
// version above after (0: any) and whose row is stale.
func (r SettleSource) StaleRuns(ctx context.Context, from, to time.Time, after uint64) ([]StaleRun, error) {
	q, args := staleRunsSQL(r.store, from, to, after, r.reviewConfig().Digest())
	rows, err := r.store.Conn().Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("find stale runs: %w", err)
	}
	type row struct {
		run    StaleRun
		starts []uint32
	}
	found, err := scanAll(rows, func(x *row) []any {
		return []any{&x.run.Project, &x.run.TraceID, &x.run.MinVersion, &x.run.MaxVersion, &x.run.MaxEndNs, &x.run.Rows, &x.starts}
	})
	if err != nil {
		return nil, fmt.Errorf("find stale runs: %w", err)
	}
	out := make([]StaleRun, len(found))
	for i, x := range found {
		out[i] = x.run
		for _, s := range x.starts {
			out[i].RowStarts = append(out[i].RowStarts, time.Unix(int64(s), 0).UTC())
		}
	}
	return out, nil
}

// staleRunsSQL builds StaleRuns' statement: the runs' spans in the range
// (span_facts, sorted by hour) against their rows (runs, within RunReach
// before the range), stale when a span is newer than a row, a row was
// reviewed under another configuration (digest), or the run has more than
// one row (under two starts: see StaleRun.RowStarts).
func staleRunsSQL(t tables, from, to time.Time, after, digest uint64) (string, []any) {
	spans := "SELECT project, trace_id, min(version) AS min_v, max(version) AS max_v, max(end_ns) AS max_end, count() AS n FROM " +
		t.Table(schema.TableSpanFacts) + " WHERE start >= ? AND start < ?"
	args := []any{from.UTC().Truncate(time.Second), to.UTC()}
	if after > 0 {
		spans += " AND version > ?"
		args = append(args, after)
	}
	spans += " GROUP BY project, trace_id"
	// A big run's row settled before rows kept trees (schema 14) is stale
	// too: a full pass (tally migrate) gives it its tree.
	rowsQ := "SELECT project, trace_id, groupArray(toUInt32(start)) AS row_starts, min(max_version) AS row_v, " +
		"min(review = ?) AS row_reviewed, max(spans >= ? AND notEmpty(tree) = 0) AS row_treeless " +
		"FROM (SELECT project, trace_id, start, max_version, review, deleted, spans, tree" +
		finalRuns(t, " WHERE start >= ? AND start < ?") + ") WHERE deleted = 0 GROUP BY project, trace_id"
	args = append(args, digest, uint64(SettledTreeMinSpans), from.UTC().Truncate(time.Second).Add(-RunReach), to.UTC())
	q := "SELECT project, trace_id, min_v, max_v, max_end, n, row_starts FROM (" + spans + ") AS s ANY LEFT JOIN (" + rowsQ +
		") AS r USING (project, trace_id) WHERE max_v > row_v OR row_reviewed = 0 OR row_treeless = 1 OR length(row_starts) > 1 ORDER BY project, trace_id"
	return q, args
}

// SpanDays lists the UTC days in [from, to) on which spans start, with
// each day's span rows (unmerged duplicates included), so that a pass over
// a long range visits only days with spans.
func (r SettleSource) SpanDays(ctx context.Context, from, to time.Time) (map[time.Time]uint64, error) {
	q, args := spanDaysSQL(r.store, from, to)
	rows, err := r.store.Conn().Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("find days with spans: %w", err)
	}
	type row struct{ day, n uint64 }
	days, err := scanAll(rows, func(x *row) []any { return []any{&x.day, &x.n} })
	if err != nil {
		return nil, fmt.Errorf("find days with spans: %w", err)
	}
	out := make(map[time.Time]uint64, len(days))
	for _, d := range days {
		out[time.Unix(int64(d.day), 0).UTC()] = d.n
	}
	return out, nil
}

// spanDaysSQL builds SpanDays' statement.
func spanDaysSQL(t tables, from, to time.Time) (string, []any) {
	return "SELECT toUInt64(intDiv(toUInt32(start), 86400) * 86400) AS d, count() FROM " + t.Table(schema.TableSpanFacts) +
		" WHERE start >= ? AND start < ? GROUP BY d", []any{from.UTC().Truncate(time.Second), to.UTC()}
}

// SettledMark reads through which span version the run table is complete
// (schema.RunMarkSettled): 0 when nothing was settled yet.
func (r *core) SettledMark(ctx context.Context) (uint64, error) {
	q, args := settledMarkSQL(r.store)
	var v uint64
	if err := r.store.Conn().QueryRow(ctx, q, args...).Scan(&v); err != nil {
		return 0, fmt.Errorf("read the settled mark: %w", err)
	}
	return v, nil
}

// settledMarkSQL builds SettledMark's statement.
func settledMarkSQL(t tables) (string, []any) {
	return "SELECT toUInt64(argMax(value, version)) FROM " + t.Table(schema.TableRunMarks) + " WHERE name = ?", []any{schema.RunMarkSettled}
}

// SettledRun is a run's new row, and the settle's verdict on it.
type SettledRun struct {
	Row schema.RunRow
	// Quiet is false when a span of the run ended or was written after
	// the quiet time given: the row is not to be written yet.
	Quiet bool
}

// Settle computes the rows of project's runs ids from their spans — read as the outline a big run's detail is
// built and reviewed from —: the summary and tool classes of runDetail, the
// safety review of reviewDetail, the configuration of runConfigs, the
// approvals' waits and the spans' own evaluation results (spanOutcomes),
// and for a run of at least SettledTreeMinSpans spans its tree (RunRow.Tree:
// the detail, reviewed, as RunTree reads it back). The runs are located
// by their key alone, as a run's detail locates its run: all of a run's
// spans, however long before the span that made it stale it started (a
// window would settle a run longer than it from its later spans alone,
// under a second start, and leave its row under the first). quietNs is the
// time (Unix ns) before which a run's last span must have ended and been
// written for its row to be final (SettledRun.Quiet). Runs without spans
// (deleted since) are left out.
func (r SettleSource) Settle(ctx context.Context, project string, ids []string, quietNs uint64) ([]SettledRun, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	// Where the runs' spans are, from the key columns alone (as a run's
	// detail locates its run): the wide reads then visit only those days'
	// partitions.
	lq, largs := settleExtentSQL(r.store, project, ids)
	var first, last time.Time
	var n uint64
	if err := r.store.Conn().QueryRow(ctx, lq, largs...).Scan(&first, &last, &n); err != nil {
		return nil, fmt.Errorf("locate runs to settle: %w", err)
	}
	if n == 0 {
		return nil, nil
	}
	lo, hi := first, last
	q, args := settleSpansSQL(r.store, project, ids, lo, hi)
	rows, err := r.store.Conn().Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("load runs to settle: %w", err)
	}
	// n counts duplicate deliveries not yet merged, so it bounds the rows
	// read: one slice of that size spares the copies of a growing one.
	spans, err := schema.SpanOutline(reviewOutline()).Scan(rows, int(min(n, maxSettleCapacity)))
	rows.Close()
	if err != nil {
		return nil, fmt.Errorf("load runs to settle: %w", err)
	}
	// Each run's spans as a part of the one slice read, which comes in
	// run order (settleSpansSQL): a copy per run would hold every span
	// twice.
	byRun := map[string][]schema.Span{}
	var found []string
	for i := 0; i < len(spans); {
		j := i + 1
		for j < len(spans) && spans[j].TraceID == spans[i].TraceID {
			j++
		}
		byRun[spans[i].TraceID] = spans[i:j:j]
		found = append(found, spans[i].TraceID)
		i = j
	}
	if len(found) == 0 {
		return nil, nil
	}
	content, err := r.reviewContent(ctx, project, found, lo, hi, false)
	if err != nil {
		return nil, err
	}
	outcomes := map[string][]Outcome{}
	if err := r.spanOutcomes(ctx, project, traceSet(found), lo, hi, outcomes); err != nil {
		return nil, err
	}
	configs, err := r.runConfigs(ctx, project, found, lo, hi)
	if err != nil {
		return nil, err
	}
	cfg := r.reviewConfig()
	digest := cfg.Digest()
	out := make([]SettledRun, 0, len(found))
	for _, id := range found {
		run := byRun[id]
		d := runDetail(run)
		review := buildReview(project, &d.Summary, run, content, r.effects)
		signals := safety.Review(review, cfg)
		row := runRowOf(project, d.Summary, run, review, signals, configs[id], outcomes[id])
		row.Review = digest
		if len(run) >= SettledTreeMinSpans {
			// The tree a part of the run's page is answered from: the
			// detail as reviewDetail leaves it, on every node.
			applyReview(d, &runReview{run: review, signals: signals})
			if row.Tree, err = encodeSettledTree(d); err != nil {
				return nil, fmt.Errorf("settle run %s: %w", id, err)
			}
		}
		quiet := true
		for i := range run {
			row.MaxVersion = max(row.MaxVersion, run[i].Version)
			if run[i].EndNs >= quietNs || run[i].Version >= quietNs {
				quiet = false
			}
		}
		out = append(out, SettledRun{Row: row, Quiet: quiet})
	}
	return out, nil
}

// maxSettleCapacity bounds the slice Settle makes up front for a load's
// spans (the settler's MaxLoadSpans bounds the load itself).
const maxSettleCapacity = 1 << 20

// settleExtentSQL builds Settle's first read: the first and last start
// (second) of the runs ids' spans, and their rows, by the key alone (on
// 10M spans, 500 runs located in 25–30 ms with or without a window of
// two days).
func settleExtentSQL(t tables, project string, ids []string) (string, []any) {
	return "SELECT min(start), max(start), count() FROM " + t.Table(schema.TableSpans) +
		" PREWHERE project = ? AND trace_id IN ?", []any{project, traceSet(ids)}
}

// settleSpansSQL builds Settle's read: the runs ids' spans (deduplicated,
// with their versions) as the outline a big run's tree is built and
// reviewed from (reviewOutline: the wide columns only where the review
// reads them), in run and start order.
func settleSpansSQL(t tables, project string, ids []string, lo, hi time.Time) (string, []any) {
	q := "SELECT " + schema.SpanOutline(reviewOutline()).List() + " FROM " + final(t.Table(schema.TableSpans)) +
		" PREWHERE project = ? AND trace_id IN ? WHERE start >= ? AND start <= ? ORDER BY trace_id, start_ns, span_id"
	return q, []any{project, traceSet(ids), lo.UTC().Truncate(time.Second), hi.UTC()}
}

// runRowOf is a run's row from its detail's summary, its spans and its
// review.
func runRowOf(project string, sum RunSummary, spans []schema.Span, review safety.Run, signals []safety.Signal, config RunConfig, outcomes []Outcome) schema.RunRow {
	row := schema.RunRow{
		Project: project, TraceID: sum.TraceID, Start: sum.Start.Truncate(time.Second),
		StartNs: uint64(sum.Start.UnixNano()), EndNs: uint64(sum.End.UnixNano()),
		Name: sum.Name, Task: sum.Task, Service: sum.Service, Conversation: sum.ConversationID, User: sum.UserID,
		Agents: sum.Agents, Models: sum.Models,
		Spans: uint64(sum.Spans), LLMCalls: uint64(sum.LLMCalls), ToolCalls: uint64(sum.ToolCalls), Errors: uint64(sum.Errors),
		InputTokens: sum.Usage.Input, CacheReadTokens: sum.Usage.CacheRead, CacheWriteTokens: sum.Usage.CacheWrite,
		OutputTokens: sum.Usage.Output, ReasoningTokens: sum.Usage.Reasoning,
		CostTotal: sum.Cost.Total, CostInput: sum.Cost.Input, CostCacheRead: sum.Cost.CacheRead,
		CostCacheWrite: sum.Cost.CacheWrite, CostOutput: sum.Cost.Output, ConfidenceSpend: sum.CostByConfidence,
		Unpriced: uint64(sum.UnpricedSpans), Unreconciled: uint64(sum.UnreconciledSpans),
		Fingerprint: config.Fingerprint,
	}
	if sum.Status == RunError {
		row.Failed = 1
	}
	if sum.UsageFromAggregate {
		row.FromAggregate = 1
	}
	if sum.ToolRetries != nil {
		row.ToolRetries = uint64(*sum.ToolRetries)
	}
	if sum.ToolRepeats != nil {
		row.ToolRepeats = uint64(*sum.ToolRepeats)
	}
	if b, err := json.Marshal(config); err == nil {
		row.Config = string(b)
	}
	providers := map[string]bool{}
	for i := range spans {
		if s := &spans[i]; s.Provider != "" && s.SpanType == schema.TypeInference {
			providers[s.Provider] = true
		}
	}
	tools, names := runSpanSets(spans)
	// The root is the earliest root span (summarize's rule).
	if root := earliestRoot(spans); root != nil {
		row.RootName = root.Name
	}
	row.Providers, row.Tools, row.Names = sortedKeys(providers), sortedKeys(tools), sortedKeys(names)
	// The approvals the review read (every span's, once): waits apart
	// from active time, as caps measure them.
	row.ActiveNs = row.EndNs - row.StartNs
	if len(review.Approvals) > 0 {
		active, wait := safety.ActiveAndWait(review.Approvals, row.StartNs, row.EndNs)
		row.ActiveNs, row.WaitNs = uint64(active), wait
	}
	for _, st := range review.Steps {
		row.StepTools = append(row.StepTools, st.Tool)
		row.StepStatuses = append(row.StepStatuses, string(st.Status))
		row.StepEffects = append(row.StepEffects, string(st.Effect))
	}
	for _, sig := range signals {
		row.SignalKinds = append(row.SignalKinds, string(sig.Kind))
		row.SignalTools = append(row.SignalTools, sig.Tool)
	}
	if len(signals) > 0 {
		if b, err := json.Marshal(signals); err == nil {
			row.Signals = string(b)
		}
	}
	if len(outcomes) > 0 {
		if b, err := json.Marshal(outcomes); err == nil {
			row.Outcomes = string(b)
		}
	}
	for _, o := range outcomes {
		if o.Passed != nil {
			row.Verdicts = append(row.Verdicts, verdictOf(o.Name, *o.Passed))
		}
	}
	return row
}

// runSpanSets are what a run's row keeps of its spans for the list's
// filters by tool and search: the tools its tool spans called (UnknownName
// for one without a name) and its distinct span names, the first
// schema.MaxRunNames of them in span order. A run in flight is filtered
// by the same sets (summarizeLive), so that settling never changes which
// filters keep it.
func runSpanSets(spans []schema.Span) (tools, names map[string]bool) {
	tools, names = map[string]bool{}, map[string]bool{}
	for i := range spans {
		s := &spans[i]
		if s.SpanType == schema.TypeTool {
			tools[cmp.Or(s.ToolName, UnknownName)] = true
		}
		if len(names) < schema.MaxRunNames {
			names[s.Name] = true
		}
	}
	return tools, names
}

// verdictOf is one element of schema.RunRow.Verdicts.
func verdictOf(name string, passed bool) string {
	if passed {
		return "pass:" + name
	}
	return "fail:" + name
}

// verdictOutcome reads an element of schema.RunRow.Verdicts back as the
// outcome RunVerdict grades by (its name and verdict).
func verdictOutcome(v string) Outcome {
	verdict, name, _ := strings.Cut(v, ":")
	passed := verdict == "pass"
	return Outcome{Name: name, Passed: &passed}
}

// earliestRoot is the run's earliest span without a parent, nil without.
func earliestRoot(spans []schema.Span) *schema.Span {
	var root *schema.Span
	for i := range spans {
		if s := &spans[i]; s.ParentSpanID == "" && (root == nil || s.StartNs < root.StartNs) {
			root = s
		}
	}
	return root
}
