package query

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tallyhq/tally/safety"
	"github.com/tallyhq/tally/schema"
)

// The reports over a window's runs (tasks, versions, comparisons, caps,
// the safety review) read every run of the window: the settled ones from
// the run table, with what settling computed of them (facts), and the
// live ones from their spans, whose facts the reports then read as before.

// runFacts is what the run table holds of a settled run beyond its
// summary: the outputs of the reads a report would otherwise make of its
// spans.
type runFacts struct {
	config   RunConfig
	steps    []safety.Step // Tool, Status and Effect set
	signals  []safety.Signal
	activeNs uint64
	waitNs   uint64
	outcomes []Outcome // the spans' own evaluation results
}

// windowRun is one run of a report's window; facts is nil for a live run.
type windowRun struct {
	RunSummary
	facts *runFacts
}

// windowRuns reads every run f selects (its window and filters; its
// limit, cursor and order are ignored), newest first; of the settled runs'
// facts, those want names (the others are left zero).
func (r *core) windowRuns(ctx context.Context, f RunFilter, want facts) ([]windowRun, error) {
	sel, err := selectRuns(r.store, f)
	if err != nil {
		return nil, err
	}
	mark, err := r.SettledMark(ctx)
	if err != nil {
		return nil, err
	}
	var out []windowRun
	if mark > 0 {
		liveSQL, liveArgs := liveRunsSQL(r.store, f.Project, f.Since, mark)
		q, args := settledFactsSQL(r.store, f.Project, sel, want, liveSQL, liveArgs)
		rows, err := r.store.Conn().Query(ctx, q, args...)
		if err != nil {
			return nil, fmt.Errorf("read settled runs: %w", err)
		}
		type row struct {
			run                                  runRow
			retries, repeats                     uint64
			config, signals, outcomes            string
			stepTools, stepStatuses, stepEffects []string
			activeNs, waitNs                     uint64
		}
		settled, err := scanAll(rows, func(x *row) []any {
			return append(x.run.dest(), &x.retries, &x.repeats, &x.config, &x.stepTools, &x.stepStatuses, &x.stepEffects,
				&x.signals, &x.activeNs, &x.waitNs, &x.outcomes)
		})
		if err != nil {
			return nil, fmt.Errorf("read settled runs: %w", err)
		}
		out = make([]windowRun, 0, len(settled))
		for i := range settled {
			x := &settled[i]
			sum := x.run.summary()
			retries, repeats := int(x.retries), int(x.repeats)
			sum.ToolRetries, sum.ToolRepeats, sum.Settled = &retries, &repeats, true
			facts := &runFacts{activeNs: x.activeNs, waitNs: x.waitNs}
			if err := decodeFact(x.config, &facts.config); err != nil {
				return nil, fmt.Errorf("run %s: configuration: %w", sum.TraceID, err)
			}
			if err := decodeFact(x.signals, &facts.signals); err != nil {
				return nil, fmt.Errorf("run %s: signals: %w", sum.TraceID, err)
			}
			if err := decodeFact(x.outcomes, &facts.outcomes); err != nil {
				return nil, fmt.Errorf("run %s: outcomes: %w", sum.TraceID, err)
			}
			for j := range min(len(x.stepTools), len(x.stepStatuses), len(x.stepEffects)) {
				facts.steps = append(facts.steps, safety.Step{Tool: x.stepTools[j], Status: safety.Status(x.stepStatuses[j]),
					Effect: safety.Effect(x.stepEffects[j])})
			}
			out = append(out, windowRun{RunSummary: sum, facts: facts})
		}
		sel = sel.narrowed("trace_id IN ("+liveSQL+")", liveArgs)
	}
	q, args := runSummarySQL(r.store, sel)
	rows, err := r.store.Conn().Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	live, err := scanAll(rows, (*runRow).dest)
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	for i := range live {
		out = append(out, windowRun{RunSummary: live[i].summary()})
	}
	slices.SortFunc(out, func(a, b windowRun) int {
		return cmp.Or(b.Start.Compare(a.Start), strings.Compare(b.TraceID, a.TraceID))
	})
	return out, nil
}

// decodeFact reads a JSON column of the run table ("" is none).
func decodeFact(s string, v any) error {
	if s == "" {
		return nil
	}
	return json.Unmarshal([]byte(s), v)
}

// settledFactsSQL builds windowRuns' read of the settled runs sel selects
// that are not live: runColumns, the retries and repeats, and the facts
// want names (empty values for the others).
func settledFactsSQL(t tables, project string, sel runSelection, want facts, liveSQL string, liveArgs []any) (string, []any) {
	pick := func(on bool, col, none string) string {
		if on {
			return col
		}
		return none + " AS " + col
	}
	sub, args := settledRunsSQL(t, project, sel, strings.Join([]string{
		pick(want.config, "config", "''"),
		pick(want.review, "step_tools", "emptyArrayString()"), pick(want.review, "step_statuses", "emptyArrayString()"),
		pick(want.review, "step_effects", "emptyArrayString()"), pick(want.review, "signals", "''"),
		pick(want.approvals, "active_ns", "toUInt64(0)"), pick(want.approvals, "wait_ns", "toUInt64(0)"),
		pick(want.outcomes, "outcomes", "''")}, ", "))
	cond := append([]string{"deleted = 0"}, sel.rows...)
	args = append(args, sel.rowArgs...)
	cond = append(cond, "trace_id NOT IN ("+liveSQL+")")
	args = append(args, liveArgs...)
	return "SELECT " + runColumns + ", n_retries, n_repeats, config, step_tools, step_statuses, step_effects, signals, active_ns, wait_ns, outcomes FROM (" +
		sub + ")\nWHERE " + strings.Join(cond, " AND "), args
}

// liveFacts fills in what the reports need of the live runs among runs
// (those without facts) from their spans: configurations (withConfig),
// tool retries (withRetries), approvals' active time and waits
// (withApprovals).
func (r *core) liveFacts(ctx context.Context, project string, runs []windowRun, withConfig, withRetries, withApprovals bool) error {
	var live []RunSummary
	var at []int
	for i := range runs {
		if runs[i].facts == nil {
			live = append(live, runs[i].RunSummary)
			at = append(at, i)
		}
	}
	if len(live) == 0 {
		return nil
	}
	facts := make([]runFacts, len(live))
	if withRetries {
		if err := r.addRetries(ctx, project, live); err != nil {
			return err
		}
	}
	if withConfig {
		ids, lo, hi := runsExtent(len(live), func(i int) *RunSummary { return &live[i] })
		configs, err := r.runConfigs(ctx, project, ids, lo, hi)
		if err != nil {
			return err
		}
		for i := range live {
			facts[i].config = configs[live[i].TraceID]
		}
	}
	if withApprovals {
		approvals, err := r.runApprovals(ctx, project, live)
		if err != nil {
			return err
		}
		for i := range live {
			s := &live[i]
			facts[i].activeNs = uint64(s.End.UnixNano() - s.Start.UnixNano())
			if a := approvals[s.TraceID]; len(a) > 0 {
				active, wait := safety.ActiveAndWait(a, uint64(s.Start.UnixNano()), uint64(s.End.UnixNano()))
				facts[i].activeNs, facts[i].waitNs = uint64(active), wait
			}
		}
	}
	for j, i := range at {
		runs[i].RunSummary = live[j]
		runs[i].facts = &facts[j]
	}
	return nil
}

// windowOutcomes reads the outcomes of runs: those posted for runs of the
// window (one read of the outcomes table by the runs' starts), the settled
// runs' span outcomes from their facts, and the live runs' from their
// spans. Call it before liveFacts, which gives live runs facts too.
func (r *core) windowOutcomes(ctx context.Context, project string, runs []windowRun) (map[string][]Outcome, error) {
	out := map[string][]Outcome{}
	if len(runs) == 0 {
		return out, nil
	}
	var live []string
	lo, hi := runs[0].Start, runs[0].End
	for i := range runs {
		lo, hi = minTime(lo, runs[i].Start), maxTime(hi, runs[i].End)
		if runs[i].facts == nil {
			live = append(live, runs[i].TraceID)
		}
	}
	if len(live) > 0 {
		spanOut, err := r.outcomes(ctx, project, live, lo, hi)
		if err != nil {
			return nil, err
		}
		for id, o := range spanOut {
			out[id] = o
		}
	}
	if len(live) == len(runs) {
		return out, nil
	}
	posted := map[string][]Outcome{}
	if err := r.postedInWindow(ctx, project, lo, hi, posted); err != nil {
		return nil, err
	}
	for i := range runs {
		if f := runs[i].facts; f != nil {
			id := runs[i].TraceID
			out[id] = append(append(out[id], posted[id]...), f.outcomes...)
		}
	}
	return out, nil
}

// postedInWindow adds the latest post of each outcome of project's runs
// that started in [lo, hi] to out.
func (r *core) postedInWindow(ctx context.Context, project string, lo, hi time.Time, out map[string][]Outcome) error {
	q, args := postedInWindowSQL(r.store, project, lo, hi)
	return r.scanPosted(ctx, q, args, out)
}

// postedInWindowSQL builds postedInWindow's statement. run_start is the
// run's start when the outcome was posted: a later span may have moved
// the run's start earlier since, by at most the trace window.
func postedInWindowSQL(t tables, project string, lo, hi time.Time) (string, []any) {
	q := "SELECT trace_id, span_id, name, source, score, has_score, label, passed, explanation, created_at FROM (" +
		"SELECT * FROM " + t.Table(schema.TableOutcomes) + " WHERE project = ? AND run_start >= ? AND run_start <= ?" +
		" " + latestOf("trace_id, name, source, span_id") + ")" +
		" ORDER BY trace_id, created_at, name, source, span_id"
	return q, []any{project, lo.UTC().Truncate(time.Second), hi.UTC().Add(DefaultTraceWindow)}
}
