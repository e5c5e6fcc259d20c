package query

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/tallyhq/tally/consistency"
	"github.com/tallyhq/tally/schema"
)

// The tasks and caps reports of a window read from the run rollup
// (windowFromRollup): the same figures as taskReport's and taskCaps',
// their percentiles from the classes' merged sketches, and the runs they
// name (failed, over a cap) and the counts over a cap found among the runs
// read one by one and in the rolled-up hours whose maxima or counts say
// they may hold one (scanHours). The passes over a task's token budget
// (three times a median: common) are counted from the sketch.

// grading is how a group's runs are graded: by their outcomes' verdicts
// when any run of the group has one, else by their status.
type grading struct{ fromStatus bool }

func gradingOf(g *groupClasses) grading { return grading{fromStatus: !g.anyVerdict()} }

func (gr grading) graded(verdict int8, failed bool) bool { return gr.fromStatus || verdict != 0 }
func (gr grading) passed(verdict int8, failed bool) bool {
	if gr.fromStatus {
		return !failed
	}
	return verdict > 0
}
func (gr grading) failed(verdict int8, failed bool) bool {
	if gr.fromStatus {
		return failed
	}
	return verdict < 0
}
func (gr grading) from() string {
	if gr.fromStatus {
		return "status"
	}
	return "outcomes"
}

func every(int8, bool) bool { return true }

// classPasses reports whether class is a passing one under gr.
func (gr grading) classPasses(class uint8) bool { return gr.passed(schema.RunClassOf(class)) }
func (gr grading) classFails(class uint8) bool  { return gr.failed(schema.RunClassOf(class)) }

// tasksFromRollup is Tasks over w.
func (r *core) tasksFromRollup(ctx context.Context, f TaskFilter, w *rolledWindow) (*TasksReport, error) {
	rep := &TasksReport{By: f.By, Since: f.Since, Until: f.Until, RunsRead: w.runs, Quantiles: QuantilesSketch, Tasks: []TaskReport{}}
	type group struct {
		t      TaskReport
		grade  grading
		budget float64
		failed []streamedRun
	}
	groups := map[string]*group{}
	for key, g := range w.groups {
		gr := gradingOf(g)
		all, graded, passed, failed := g.sum(every), g.sum(gr.graded), g.sum(gr.passed), g.sum(gr.failed)
		if all.runs == 0 {
			continue
		}
		t := TaskReport{Key: key, Runs: int(all.runs), VerdictsFrom: gr.from(), PassAtK: map[string]float64{},
			PassHatK: map[string]float64{}, FailedRuns: []string{}, Graded: int(graded.runs), Passed: int(passed.runs),
			Failed: int(failed.runs)}
		t.Ungraded = t.Runs - t.Graded
		if f.By == "task" {
			t.Task = key
		}
		t.setPassEstimates(f.MaxK)
		x := &group{grade: gr}
		if t.Passed > 0 {
			per := graded.m[mCost].Sum / float64(t.Passed)
			t.CostPerSuccess = &per
			median, _ := passed.sk[mTokens].Quantiles2(0.5, 0.5, passed.m[mTokens].Max, true)
			t.BudgetTokens = f.BudgetMultiple * median
			x.budget = t.BudgetTokens
		}
		t.Steps, t.Tokens = consistency.SketchSpread(all.m[mSteps], all.sk[mSteps], true), consistency.SketchSpread(all.m[mTokens], all.sk[mTokens], true)
		t.CostUSD = consistency.SketchSpread(all.m[mCost], all.sk[mCost], false)
		t.DurationMs = consistency.SketchSpread(all.m[mDuration], all.sk[mDuration], false)
		t.CostPerRun = t.CostUSD.Mean
		x.t = t
		groups[key] = x
	}
	// A run's part in its groups' named runs and counts.
	visit := func(s *streamedRun) {
		for _, k := range s.keys {
			x := groups[k]
			if x == nil {
				continue
			}
			if x.grade.classFails(s.class) {
				x.failed = append(x.failed, *s)
			}
			if x.t.Passed > 0 && x.grade.classPasses(s.class) && s.v[mTokens] > x.budget {
				x.t.OverBudgetPasses++
			}
		}
	}
	for i := range w.streamed {
		visit(&w.streamed[i])
	}
	// The passes over budget of the rolled-up hours, from their sketch:
	// at a week of a busy project's runs nearly every hour has some, so
	// they are counted by bucket rather than read.
	failHours := map[string][]time.Time{}
	for _, h := range w.hourly {
		if x := groups[h.key]; x != nil && x.grade.classFails(h.class) {
			failHours[h.key] = append(failHours[h.key], h.hour)
		}
	}
	for key, x := range groups {
		if g := w.rolledUp[key]; g != nil && x.t.Passed > 0 {
			passed := g.sum(x.grade.passed)
			x.t.OverBudgetPasses += int(passed.sk[mTokens].CountAbove(x.budget))
		}
	}
	// The newest failed runs: the rolled-up hours with failures, newest
	// first, until every group's five newest are known.
	var fails []time.Time
	for _, hs := range failHours {
		fails = append(fails, hs...)
	}
	var scanned time.Time // the oldest hour scanned
	done := func() bool {
		for k, x := range groups {
			known := 0
			for i := range x.failed {
				if x.failed[i].startNs >= uint64(scanned.UnixNano()) {
					known++
				}
			}
			if known >= 5 {
				continue
			}
			if slices.ContainsFunc(failHours[k], func(h time.Time) bool { return h.Before(scanned) }) {
				return false
			}
		}
		return true
	}
	onlyFailed := func(run *windowRun, verdict *bool, s *streamedRun) {
		for _, k := range s.keys {
			if x := groups[k]; x != nil && x.grade.classFails(s.class) {
				c := *s
				c.keys = nil
				x.failed = append(x.failed, c)
			}
		}
	}
	if len(fails) > 0 {
		hours := slices.Clone(fails)
		slices.SortFunc(hours, func(a, b time.Time) int { return b.Compare(a) })
		hours = slices.Compact(hours)
		// scanHours calls done after each hour; the hour just scanned is
		// the oldest, whether or not it held a failed run of a group.
		i := 0
		err := r.scanHours(ctx, w, hours, true, func() bool {
			scanned = hours[i]
			i++
			return done()
		}, onlyFailed)
		if err != nil {
			return nil, err
		}
	}
	for _, x := range groups {
		slices.SortFunc(x.failed, func(a, b streamedRun) int { return newestFirst(&a, &b) })
		for i := range x.failed[:min(5, len(x.failed))] {
			x.t.FailedRuns = append(x.t.FailedRuns, x.failed[i].traceID)
		}
		if x.t.Passed > 0 {
			share := float64(x.t.OverBudgetPasses) / float64(x.t.Passed)
			x.t.OverBudgetShare = &share
		}
		rep.Tasks = append(rep.Tasks, x.t)
	}
	sortTasks(rep.Tasks)
	return rep, nil
}

// capsFromRollup is Caps over w.
func (r ReviewReader) capsFromRollup(ctx context.Context, f CapsFilter, w *rolledWindow) (*CapsReport, error) {
	rep := &CapsReport{Since: f.Since, Until: f.Until, Multiplier: f.Multiplier, RunsRead: w.runs, Quantiles: QuantilesSketch, Tasks: []TaskCaps{}}
	type group struct {
		tc       TaskCaps
		figures  []*CapFigure
		exceeded []streamedRun
	}
	measures := [5]int{mLLM, mTools, mTokens, mCost, mActive} // capMeasures' order
	groups := map[string]*group{}
	for task, g := range w.groups {
		gr := gradingOf(g)
		all, ok := g.sum(every), g.sum(gr.passed)
		if ok.runs == 0 {
			continue
		}
		x := &group{tc: TaskCaps{Task: task, Runs: int(all.runs), Successful: int(ok.runs), VerdictsFrom: gr.from(),
			ExceededRuns: []string{}, Configured: []string{}, RunsWaiting: int(all.waiting)}}
		wait := all.m[mWait]
		wait.N = all.waiting
		x.tc.WaitMs = consistency.SketchSpread(wait, all.sk[mWait].WithoutZeros(), false)
		x.tc.FewRuns = x.tc.Successful < 20
		x.figures = []*CapFigure{&x.tc.Iterations, &x.tc.ToolCalls, &x.tc.Tokens, &x.tc.CostUSD, &x.tc.ActiveMs}
		for i, fig := range x.figures {
			s := consistency.SketchSpread(ok.m[measures[i]], ok.sk[measures[i]], measures[i] != mCost && measures[i] != mActive)
			fig.P50, fig.P99 = s.P50, s.P99
			fig.Suggested = roundUp(i, f.Multiplier*s.P99)
		}
		groups[task] = x
	}
	visit := func(s *streamedRun) {
		for _, k := range s.keys {
			x := groups[k]
			if x == nil {
				continue
			}
			over := false
			for i, fig := range x.figures {
				if fig.Suggested > 0 && s.v[measures[i]] > fig.Suggested {
					fig.Exceeded++
					over = true
				}
			}
			if over {
				x.tc.Exceeded++
				c := *s
				c.keys = nil
				x.exceeded = append(x.exceeded, c)
			}
		}
	}
	for i := range w.streamed {
		visit(&w.streamed[i])
	}
	// Every rolled-up hour with a run over a suggested cap, by its maxima.
	var hours []time.Time
	for _, h := range w.hourly {
		x := groups[h.key]
		if x == nil {
			continue
		}
		for i, fig := range x.figures {
			if fig.Suggested > 0 && h.max[measures[i]] > fig.Suggested {
				hours = append(hours, h.hour)
				break
			}
		}
	}
	if err := r.scanHours(ctx, w, hours, false, nil, func(_ *windowRun, _ *bool, s *streamedRun) { visit(s) }); err != nil {
		return nil, err
	}
	for task, x := range groups {
		slices.SortFunc(x.exceeded, func(a, b streamedRun) int { return newestFirst(&a, &b) })
		for i := range x.exceeded[:min(5, len(x.exceeded))] {
			x.tc.ExceededRuns = append(x.tc.ExceededRuns, x.exceeded[i].traceID)
		}
		x.tc.Spec = suggestedSpec(task, x.figures)
		x.tc.Configured = r.configuredCaps(f.Project, task)
		rep.Tasks = append(rep.Tasks, x.tc)
	}
	sortCaps(rep.Tasks)
	return rep, nil
}

// versionsFromRollup is Versions over w (grouped by version): each
// version's configuration is its newest run's, read by that run's key.
func (r OutcomeReader) versionsFromRollup(ctx context.Context, f VersionFilter, w *rolledWindow) ([]TaskVersions, error) {
	var ids []string
	var starts []uint32
	for key, g := range w.groups {
		all := g.sum(every)
		if _, live := w.liveConfigs[liveConfigKey(key, all.seen.last)]; !live && all.runs > 0 {
			ids = append(ids, all.seen.last)
			starts = append(starts, uint32(all.seen.lastNs/1e9))
		}
	}
	configs, err := r.settledRunConfigs(ctx, f.Project, starts, ids)
	if err != nil {
		return nil, err
	}
	byTask := map[string][]VersionStats{}
	for key, g := range w.groups {
		all := g.sum(every)
		if all.runs == 0 {
			continue
		}
		task, fp, _ := strings.Cut(key, "\x00")
		gr := gradingOf(g)
		v := VersionStats{Fingerprint: fp, Runs: int(all.runs), Graded: int(g.sum(gr.graded).runs), Passed: int(g.sum(gr.passed).runs),
			FirstSeen: time.Unix(0, int64(all.seen.firstNs)).UTC(), LastSeen: time.Unix(0, int64(all.seen.lastNs)).UTC(),
			CostPerRun: all.m[mCost].Sum / float64(all.runs)}
		v.PassRate = side{graded: v.Graded, passed: v.Passed}.passRate()
		v.P95Ms, _ = all.sk[mDuration].Quantiles2(0.95, 0.95, all.m[mDuration].Max, false)
		if c, live := w.liveConfigs[liveConfigKey(key, all.seen.last)]; live {
			v.Config = c
		} else {
			v.Config = configs[rowKey{all.seen.last, uint32(all.seen.lastNs / 1e9)}]
		}
		byTask[task] = append(byTask[task], v)
	}
	return sortVersions(byTask), nil
}
