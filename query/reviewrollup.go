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
// signal, as settledSignalsSQL does for a window: the keys of the rows
// with signals (any version: a narrow scan), then those keys' current
// rows, of which those still with signals and matching f are kept.
func (r *core) rolledFlagged(ctx context.Context, f SignalFilter, hours []hourVersion) ([]windowRun, error) {
	q, args := flaggedKeysSQL(r.store, f.Project, hours)
	rows, err := r.store.Conn().Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("find runs with signals: %w", err)
	}
	keys, err := scanAll(rows, func(k *rowKey) []any { return []any{&k.start, &k.traceID} })
	if err != nil {
		return nil, fmt.Errorf("find runs with signals: %w", err)
	}
	starts, ids := make([]uint32, len(keys)), make([]string, len(keys))
	for i, k := range keys {
		starts[i], ids[i] = k.start, k.traceID
	}
	var out []windowRun
	err = r.eachKeyChunk(starts, ids, func(starts []uint32, ids []string) error {
		q, args := flaggedRowsSQL(r.store, f, starts, ids)
		rows, err := r.store.Conn().Query(ctx, q, args...)
		if err != nil {
			return fmt.Errorf("read settled signals: %w", err)
		}
		type flaggedRow struct {
			traceID, task, signals string
			agents                 []string
			startNs                uint64
		}
		found, err := scanAll(rows, func(x *flaggedRow) []any { return []any{&x.traceID, &x.startNs, &x.task, &x.agents, &x.signals} })
		if err != nil {
			return fmt.Errorf("read settled signals: %w", err)
		}
		for _, x := range found {
			run := windowRun{facts: &runFacts{}}
			run.TraceID, run.Start, run.Task, run.Agents, run.Settled = x.traceID, nsTime(x.startNs), x.task, nonNil(x.agents), true
			if err := decodeFact(x.signals, &run.facts.signals); err != nil {
				return fmt.Errorf("run %s: signals: %w", x.traceID, err)
			}
			out = append(out, run)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b windowRun) int { return newer(&a.RunSummary, &b.RunSummary) })
	return out, nil
}

// flaggedKeysSQL builds the scan for the keys of project's run rows with
// signals in the given hours (any version).
func flaggedKeysSQL(t tables, project string, hours []hourVersion) (string, []any) {
	hs := make([]string, len(hours))
	for i, h := range hours {
		hs[i] = strconv.FormatInt(h.hour.Unix(), 10)
	}
	return "SELECT DISTINCT toUInt32(start), trace_id FROM " + t.Table(schema.TableRuns) +
			" WHERE project = ? AND start >= ? AND start < ? AND toUInt32(toStartOfHour(start)) IN (" + strings.Join(hs, ", ") + ")" +
			" AND notEmpty(signal_kinds)",
		[]any{project, hours[0].hour.UTC(), hours[len(hours)-1].hour.Add(time.Hour).UTC()}
}

// flaggedRowsSQL builds the read of the current rows of the keys (starts
// and ids), kept when not a tombstone, with signals and of f's task and
// agent: settledSignalsSQL's columns.
func flaggedRowsSQL(t tables, f SignalFilter, starts []uint32, ids []string) (string, []any) {
	cond := []string{"deleted = 0", "notEmpty(signal_kinds)"}
	args := []any{f.Project, traceSet(ids)}
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
		" WHERE project = ? AND start IN (" + startList(starts) + ") AND trace_id IN ?" + currentByKey + ")\nWHERE " +
		strings.Join(cond, " AND "), args
}
