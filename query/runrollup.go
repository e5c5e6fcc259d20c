package query

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tallyhq/tally/consistency"
	"github.com/tallyhq/tally/schema"
)

// The run rollup (schema.TableRunRollup) adds up each hour's runs by task
// and by agent, in classes of their grading (schema.RunClass), with each
// measure's exact moments and its sketch, so that the window reports
// (tasks, caps) over a week read a few thousand rows instead of every run.
// Package rollup keeps it (rollup.RunRollup) with what this file reads
// and computes; windowrollup.go reads it for the reports.

// RunHourState is the fingerprint of one project's hour of runs: the run
// table's rows of runs that started in it (count and sum of versions, old
// versions and tombstones included until merged away) and the posted
// outcomes that may be of its runs (see schema.RunRollupHourRow). Any
// change to the hour's runs — a run settled or re-settled, an outcome
// posted — changes it.
type RunHourState struct {
	Runs, RunVersionSum, Outcomes, OutcomeVersionSum uint64
}

// ProjectHour is one project's hour.
type ProjectHour struct {
	Project string
	Hour    time.Time
}

// RunHourStates reads the state of the hours in [from, to) of project's
// runs ("" every project's): every hour with runs or outcomes.
func (r RollupSource) RunHourStates(ctx context.Context, project string, from, to time.Time) (map[ProjectHour]RunHourState, error) {
	return r.runHourStates(ctx, project, from, to)
}

func (r *core) runHourStates(ctx context.Context, project string, from, to time.Time) (map[ProjectHour]RunHourState, error) {
	out := map[ProjectHour]RunHourState{}
	q, args := runHourStatesSQL(r.store, project, from, to)
	rows, err := r.store.Conn().Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read run hour states: %w", err)
	}
	var p string
	var h uint32
	var n, sum uint64
	for rows.Next() {
		if err := rows.Scan(&p, &h, &n, &sum); err != nil {
			rows.Close()
			return nil, fmt.Errorf("read run hour states: %w", err)
		}
		k := ProjectHour{p, time.Unix(int64(h), 0).UTC()}
		s := out[k]
		s.Runs, s.RunVersionSum = n, sum
		out[k] = s
	}
	err = rows.Err()
	rows.Close()
	if err != nil {
		return nil, fmt.Errorf("read run hour states: %w", err)
	}
	// An outcome's run_start is its run's start when posted, or up to an
	// hour after the run's start now: it counts for its hour and the one
	// before.
	q, args = outcomeHourStatesSQL(r.store, project, from, to.Add(time.Hour))
	rows, err = r.store.Conn().Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read outcome hour states: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := rows.Scan(&p, &h, &n, &sum); err != nil {
			return nil, fmt.Errorf("read outcome hour states: %w", err)
		}
		at := time.Unix(int64(h), 0).UTC()
		for _, hour := range []time.Time{at, at.Add(-time.Hour)} {
			if hour.Before(from) || !hour.Before(to) {
				continue
			}
			k := ProjectHour{p, hour}
			s := out[k]
			s.Outcomes += n
			s.OutcomeVersionSum += sum
			out[k] = s
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read outcome hour states: %w", err)
	}
	return out, nil
}

// runHourStatesSQL reads the run table's rows by project and hour of
// start: two narrow columns, no FINAL.
func runHourStatesSQL(t tables, project string, from, to time.Time) (string, []any) {
	where, args := "start >= ? AND start < ?", []any{from.UTC(), to.UTC()}
	if project != "" {
		where, args = "project = ? AND "+where, append([]any{project}, args...)
	}
	return "SELECT project, toUInt32(toStartOfHour(start)) AS h, count(), sum(version) FROM " + t.Table(schema.TableRuns) +
		" WHERE " + where + " GROUP BY project, h", args
}

// outcomeHourStatesSQL reads the posted outcomes by project and hour of
// run_start.
func outcomeHourStatesSQL(t tables, project string, from, to time.Time) (string, []any) {
	where, args := "run_start >= ? AND run_start < ?", []any{from.UTC(), to.UTC()}
	if project != "" {
		where, args = "project = ? AND "+where, append([]any{project}, args...)
	}
	return "SELECT project, toUInt32(toStartOfHour(run_start)) AS h, count(), sum(version) FROM " + t.Table(schema.TableOutcomes) +
		" WHERE " + where + " GROUP BY project, h", args
}

// RunRollupRecord is one recorded computation of an hour of the run
// rollup: its version and the state it was computed from.
type RunRollupRecord struct {
	Version uint64
	State   RunHourState
}

// RunRollupRecords reads the recorded computations of the hours in
// [from, to) of project ("" every project), each hour's oldest first.
func (r RollupSource) RunRollupRecords(ctx context.Context, project string, from, to time.Time) (map[ProjectHour][]RunRollupRecord, error) {
	return r.runRollupRecords(ctx, project, from, to)
}

func (r *core) runRollupRecords(ctx context.Context, project string, from, to time.Time) (map[ProjectHour][]RunRollupRecord, error) {
	where, args := "hour >= ? AND hour < ?", []any{from.UTC(), to.UTC()}
	if project != "" {
		where, args = "project = ? AND "+where, append([]any{project}, args...)
	}
	q := "SELECT project, toUInt32(hour), version, runs, run_version_sum, outcomes, outcome_version_sum FROM " +
		r.store.Table(schema.TableRunRollupHours) + " WHERE " + where + " ORDER BY project, hour, version"
	rows, err := r.store.Conn().Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read run rollup hours: %w", err)
	}
	defer rows.Close()
	out := map[ProjectHour][]RunRollupRecord{}
	var p string
	var h uint32
	var rec RunRollupRecord
	for rows.Next() {
		if err := rows.Scan(&p, &h, &rec.Version, &rec.State.Runs, &rec.State.RunVersionSum, &rec.State.Outcomes, &rec.State.OutcomeVersionSum); err != nil {
			return nil, fmt.Errorf("read run rollup hours: %w", err)
		}
		k := ProjectHour{p, time.Unix(int64(h), 0).UTC()}
		out[k] = append(out[k], rec)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read run rollup hours: %w", err)
	}
	return out, nil
}

// RunRollupKey is the identity of a run rollup row within its hour.
type RunRollupKey struct {
	Grain       uint8
	Task, Agent string
	Fingerprint string
	Class       uint8
}

// RunRollupKeys reads the keys an hour of project's run rollup has (in
// any computation), for the tombstones of a recomputation.
func (r RollupSource) RunRollupKeys(ctx context.Context, project string, hour time.Time) ([]RunRollupKey, error) {
	q := "SELECT DISTINCT grain, task, agent, fingerprint, class FROM " + r.store.Table(schema.TableRunRollup) +
		" WHERE project = ? AND hour = ?"
	rows, err := r.store.Conn().Query(ctx, q, project, hour.UTC())
	if err != nil {
		return nil, fmt.Errorf("read run rollup keys: %w", err)
	}
	keys, err := scanAll(rows, func(k *RunRollupKey) []any { return []any{&k.Grain, &k.Task, &k.Agent, &k.Fingerprint, &k.Class} })
	if err != nil {
		return nil, fmt.Errorf("read run rollup keys: %w", err)
	}
	return keys, nil
}

// runMeasuresOf are a run's values of schema.RunMeasures, from its
// summary and its facts (settled, or read from its spans; without facts
// its active time is its wall clock and it waited for nothing).
func runMeasuresOf(run *RunSummary, f *runFacts) [8]float64 {
	active, wait := run.DurationMs, 0.0
	if f != nil {
		active, wait = float64(f.activeNs)/1e6, float64(f.waitNs)/1e6
	}
	return [8]float64{float64(run.LLMCalls + run.ToolCalls), float64(run.Usage.Input + run.Usage.Output), run.Cost.Total,
		run.DurationMs, float64(run.LLMCalls), float64(run.ToolCalls), active, wait}
}

// The measures' indexes in schema.RunMeasures.
const (
	mSteps = iota
	mTokens
	mCost
	mDuration
	mLLM
	mTools
	mActive
	mWait
)

// classRuns adds up the runs of one class of one group: their count, how
// many waited for approval, and each measure's moments and sketch. The
// wait's moments count every run (zeros add nothing to the sums); its
// sketch's zeros are the runs that did not wait.
type classRuns struct {
	runs, waiting uint64
	seen          seenRuns
	m             [8]consistency.Moments
	sk            [8]consistency.Sketch
}

// seenRuns are when a group's runs started: the earliest and the latest,
// and the latest run (by start, then trace id, as newer orders runs).
type seenRuns struct {
	firstNs, lastNs uint64
	last            string
}

func (s *seenRuns) merge(o seenRuns) {
	if o.last == "" && o.lastNs == 0 {
		return
	}
	if s.last == "" && s.lastNs == 0 {
		*s = o
		return
	}
	s.firstNs = min(s.firstNs, o.firstNs)
	if o.lastNs > s.lastNs || o.lastNs == s.lastNs && o.last > s.last {
		s.lastNs, s.last = o.lastNs, o.last
	}
}

// classBuilder adds runs up into a classRuns.
type classBuilder struct {
	runs, waiting uint64
	seen          seenRuns
	m             [8]consistency.Moments
	sk            [8]consistency.SketchBuilder
}

func (b *classBuilder) add(v [8]float64, startNs uint64, traceID string) {
	b.seen.merge(seenRuns{firstNs: startNs, lastNs: startNs, last: traceID})
	b.runs++
	if v[mWait] > 0 {
		b.waiting++
	}
	for i, x := range v {
		b.m[i].Add(x)
		if b.sk[i] == nil {
			b.sk[i] = consistency.SketchBuilder{}
		}
		b.sk[i].Add(x)
	}
}

func (b *classBuilder) classRuns() classRuns {
	c := classRuns{runs: b.runs, waiting: b.waiting, seen: b.seen, m: b.m}
	for i := range b.sk {
		c.sk[i] = b.sk[i].Sketch()
	}
	return c
}

// merge adds o.
func (c *classRuns) merge(o *classRuns) {
	c.runs += o.runs
	c.waiting += o.waiting
	c.seen.merge(o.seen)
	for i := range c.m {
		c.m[i].Merge(o.m[i])
		c.sk[i].Merge(o.sk[i])
	}
}

// rollupFacts are the facts the run rollup reads of a run: its approvals
// (active time and waits), its configuration's fingerprint and its
// review's steps (a live run's, not read, are missing: an hour with a run
// in flight is read one by one until the run settles and the hour is
// computed again).
func rollupFacts() facts {
	return facts{approvals: true, fingerprint: true, review: true, noRetries: true}
}

// RunRollupHour computes the rows of one project's hour of the run rollup
// from its runs (settled ones from the run table, live ones from their
// spans: the same runs, facts and verdicts the reports read), without a
// version.
func (r RollupSource) RunRollupHour(ctx context.Context, project string, hour time.Time) ([]schema.RunRollupRow, error) {
	builders := map[RunRollupKey]*classBuilder{}
	steps := map[RunRollupKey]uint64{}
	f := RunFilter{Project: project, Since: hour, Until: hour.Add(time.Hour - time.Nanosecond)}
	err := r.eachGradedRun(ctx, f, "", rollupFacts(), runParts{}, func(run *windowRun, verdict *bool) error {
		class := schema.RunClass(gradeOf(verdict), run.Status == RunError)
		v := runMeasuresOf(&run.RunSummary, run.facts)
		add := func(k RunRollupKey) {
			b := builders[k]
			if b == nil {
				b = &classBuilder{}
				builders[k] = b
			}
			b.add(v, uint64(run.Start.UnixNano()), run.TraceID)
		}
		add(RunRollupKey{Grain: schema.RunGrainTask, Task: run.Task, Class: class})
		for _, a := range run.Agents {
			add(RunRollupKey{Grain: schema.RunGrainAgent, Task: run.Task, Agent: a, Class: class})
		}
		fp := ""
		if run.facts != nil {
			fp = run.facts.config.Fingerprint
		}
		add(RunRollupKey{Grain: schema.RunGrainVersion, Task: run.Task, Fingerprint: fp, Class: class})
		if run.facts != nil {
			for _, st := range run.facts.steps {
				k := schema.RunStepKey(st.Tool, string(st.Status), string(st.Effect))
				steps[RunRollupKey{Grain: schema.RunGrainSteps, Task: run.Task, Fingerprint: k}]++
				for _, a := range run.Agents {
					steps[RunRollupKey{Grain: schema.RunGrainAgentSteps, Task: run.Task, Agent: a, Fingerprint: k}]++
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]schema.RunRollupRow, 0, len(builders))
	for k, b := range builders {
		c := b.classRuns()
		row := schema.RunRollupRow{Project: project, Hour: hour.UTC(), Grain: k.Grain, Task: k.Task, Agent: k.Agent,
			Fingerprint: k.Fingerprint, Class: k.Class, Runs: c.runs, Waiting: c.waiting, FirstNs: c.seen.firstNs,
			LastNs: c.seen.lastNs, LastTrace: c.seen.last}
		for i := range row.Measures {
			row.Measures[i] = schema.RunMeasure{Sum: c.m[i].Sum, SumSq: c.m[i].SumSq, Max: c.m[i].Max,
				Keys: c.sk[i].Keys, Counts: c.sk[i].Counts}
		}
		out = append(out, row)
	}
	for k, n := range steps {
		out = append(out, schema.RunRollupRow{Project: project, Hour: hour.UTC(), Grain: k.Grain, Task: k.Task, Agent: k.Agent,
			Fingerprint: k.Fingerprint, Runs: n})
	}
	slices.SortFunc(out, func(a, b schema.RunRollupRow) int {
		return cmp.Or(cmp.Compare(a.Grain, b.Grain), strings.Compare(a.Task, b.Task), strings.Compare(a.Agent, b.Agent),
			strings.Compare(a.Fingerprint, b.Fingerprint), cmp.Compare(a.Class, b.Class))
	})
	return out, nil
}
