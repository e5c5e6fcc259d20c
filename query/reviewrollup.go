package query

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tallyhq/tally/safety"
	"github.com/tallyhq/tally/schema"
)

// The safety review of a window of many runs reads the settled runs'
// counts — runs by task, steps by tool, status and effect — from the run
// rollup for the hours it holds (planRollup), and finds the runs that
// raised a signal there by key: a narrow scan of the run table's signal
// kinds names the candidates, and their current rows are read by key.
// The other parts of the window are read as a window of few runs is
// (settledReview).

// settledReviewRolled is settledReview over plan: the usable hours from
// the rollup, the blocks as settledReview reads them. lv are the review's
// live runs, left out.
func (r *core) settledReviewRolled(ctx context.Context, f SignalFilter, plan *rollupPlan, lv liveSet) (settledReview, error) {
	out := settledReview{runsByTask: map[string]int{}}
	if len(plan.usable) > 0 {
		runsGrain, stepsGrain := schema.RunGrainTask, schema.RunGrainSteps
		if f.Agent != "" {
			runsGrain, stepsGrain = schema.RunGrainAgent, schema.RunGrainAgentSteps
		}
		q, args := rolledReviewSQL(r.store, RunFilter{Project: f.Project, Task: f.Task, Agent: f.Agent}, runsGrain, stepsGrain, plan.usable)
		rows, err := r.store.Conn().Query(ctx, q, args...)
		if err != nil {
			return out, fmt.Errorf("read run rollup: %w", err)
		}
		var g uint8
		var task, key string
		var n uint64
		for rows.Next() {
			if err := rows.Scan(&g, &task, &key, &n); err != nil {
				rows.Close()
				return out, fmt.Errorf("read run rollup: %w", err)
			}
			if g == runsGrain {
				out.runsByTask[task] += int(n)
				continue
			}
			parts := strings.SplitN(key, "\x00", 3)
			if len(parts) != 3 || f.Tool != "" && parts[0] != f.Tool {
				continue
			}
			out.steps = append(out.steps, stepCount{parts[0], safety.Status(parts[1]), safety.Effect(parts[2]), int(n)})
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return out, fmt.Errorf("read run rollup: %w", err)
		}
		if out.flagged, err = r.rolledFlagged(ctx, f, plan.usable); err != nil {
			return out, err
		}
	}
	for _, b := range plan.blocks {
		sel, err := selectRuns(r.store, withRange(RunFilter{Project: f.Project, Task: f.Task, Agent: f.Agent}, b[0], b[1]))
		if err != nil {
			return out, err
		}
		part, err := r.settledReview(ctx, f.Project, sel, lv, f.Tool)
		if err != nil {
			return out, err
		}
		for task, n := range part.runsByTask {
			out.runsByTask[task] += n
		}
		out.steps = append(out.steps, part.steps...)
		out.flagged = append(out.flagged, part.flagged...)
	}
	return out, nil
}

// rolledReviewSQL builds the read of the usable hours' runs by task (rows
// of runsGrain) and steps by tool, status and effect (of stepsGrain).
func rolledReviewSQL(t tables, f RunFilter, runsGrain, stepsGrain uint8, hours []hourVersion) (string, []any) {
	cond, args := runRollupCond(f, []uint8{runsGrain, stepsGrain}, hours)
	return "SELECT grain, task, fingerprint, sum(runs) FROM " + t.Table(schema.TableRunRollup) + " WHERE " + cond +
		" AND runs > 0 GROUP BY grain, task, fingerprint", args
}

// rolledFlagged reads the settled runs of the given hours that raised a
// signal, as settledSignalsSQL does for a window: the current rows of the
// keys any of whose rows has signals (flaggedRowsSQL), of which those
// still with signals and matching f are kept.
func (r *core) rolledFlagged(ctx context.Context, f SignalFilter, hours []hourVersion) ([]windowRun, error) {
	q, args := flaggedRowsSQL(r.store, f, hours)
	rows, err := r.store.Conn().Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read settled signals: %w", err)
	}
	type flaggedRow struct {
		traceID, task, signals string
		agents                 []string
		startNs                uint64
	}
	found, err := scanAll(rows, func(x *flaggedRow) []any { return []any{&x.traceID, &x.startNs, &x.task, &x.agents, &x.signals} })
	if err != nil {
		return nil, fmt.Errorf("read settled signals: %w", err)
	}
	out := make([]windowRun, 0, len(found))
	for _, x := range found {
		run := windowRun{facts: &runFacts{}}
		run.TraceID, run.Start, run.Task, run.Agents, run.Settled = x.traceID, nsTime(x.startNs), x.task, nonNil(x.agents), true
		if err := decodeFact(x.signals, &run.facts.signals); err != nil {
			return nil, fmt.Errorf("run %s: signals: %w", x.traceID, err)
		}
		out = append(out, run)
	}
	slices.SortFunc(out, func(a, b windowRun) int { return newer(&a.RunSummary, &b.RunSummary) })
	return out, nil
}

// flaggedKeysSQL builds the subquery of the keys (start, trace id) of
// project's run rows with signals in the given hours (any version: a
// narrow scan).
func flaggedKeysSQL(t tables, project string, hours []hourVersion) (string, []any) {
	hs := make([]string, len(hours))
	for i, h := range hours {
		hs[i] = strconv.FormatInt(h.hour.Unix(), 10)
	}
	return "SELECT start, trace_id FROM " + t.Table(schema.TableRuns) +
			" WHERE project = ? AND start >= ? AND start < ? AND toUInt32(toStartOfHour(start)) IN (" + strings.Join(hs, ", ") + ")" +
			" AND notEmpty(signal_kinds)",
		[]any{project, hours[0].hour.UTC(), hours[len(hours)-1].hour.Add(time.Hour).UTC()}
}

// flaggedRowsSQL builds the read of the current rows of the keys of the
// given hours' rows with signals (flaggedKeysSQL, a subquery: a key set
// built by the server, which a review of 7 days at a 100M-span store's
// density makes 4,500 keys long), kept when not a tombstone, with signals
// and of f's task and agent: settledSignalsSQL's columns.
func flaggedRowsSQL(t tables, f SignalFilter, hours []hourVersion) (string, []any) {
	keys, keyArgs := flaggedKeysSQL(t, f.Project, hours)
	cond := []string{"deleted = 0", "notEmpty(signal_kinds)"}
	args := append([]any{f.Project}, keyArgs...)
	if f.Task != "" {
		cond = append(cond, "run_task = ?")
		args = append(args, f.Task)
	}
	if f.Agent != "" {
		cond = append(cond, "has(agents, ?)")
		args = append(args, f.Agent)
	}
	return "SELECT trace_id, start_ns, run_task, agents, signals FROM (SELECT trace_id, start, start_ns, if(task != '', task, name) AS run_task, " +
		"agents, signals, signal_kinds, deleted, version FROM " + t.Table(schema.TableRuns) +
		" WHERE project = ? AND (start, trace_id) IN (" + keys + ")" + currentByKey + ")\nWHERE " +
		strings.Join(cond, " AND "), args
}
