package query

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/tallyhq/tally/consistency"
)

// VersionStats is one version (configuration fingerprint) of a task over
// a time range.
type VersionStats struct {
	Fingerprint string    `json:"fingerprint"`
	Config      RunConfig `json:"config"`
	Runs        int       `json:"runs"`
	FirstSeen   time.Time `json:"first_seen"` // its earliest run's start in the range
	LastSeen    time.Time `json:"last_seen"`
	Graded      int       `json:"graded"`
	Passed      int       `json:"passed"`
	PassRate    *float64  `json:"pass_rate"`
	CostPerRun  float64   `json:"cost_per_run"`
	P95Ms       float64   `json:"p95_duration_ms"`
}

// TaskVersions is a task's versions, newest first seen first.
type TaskVersions struct {
	Task     string         `json:"task"`
	Versions []VersionStats `json:"versions"`
}

// VersionFilter selects the runs whose versions are listed.
type VersionFilter struct {
	Project      string
	Task         string // "" every task
	Since, Until time.Time
	Outcome      string // as TaskFilter.Outcome
}

// versionedRun is a graded run with its configuration.
type versionedRun struct {
	gradedRun
	config RunConfig
}

// versionedRuns reads the graded runs f selects with their configurations;
// withRetries as runList.
func (r *core) versionedRuns(ctx context.Context, f RunFilter, outcome string, withRetries bool) ([]versionedRun, error) {
	runs, err := r.gradedRuns(ctx, f, outcome, facts{config: true, retries: withRetries})
	if err != nil || len(runs) == 0 {
		return nil, err
	}
	out := make([]versionedRun, len(runs))
	for i, run := range runs {
		out[i] = versionedRun{gradedRun: run, config: run.facts.config}
	}
	return out, nil
}

// byTaskVersion groups runs by task, then by configuration fingerprint.
func byTaskVersion(runs []versionedRun) map[string]map[string][]versionedRun {
	out := map[string]map[string][]versionedRun{}
	for _, run := range runs {
		if out[run.Task] == nil {
			out[run.Task] = map[string][]versionedRun{}
		}
		out[run.Task][run.config.Fingerprint] = append(out[run.Task][run.config.Fingerprint], run)
	}
	return out
}

// Versions lists each task's versions over the range: runs, first and last
// seen, pass rate, cost per run and p95 duration. It aggregates as the runs
// stream by (eachGradedRun): a window's runs are never held at once.
func (r OutcomeReader) Versions(ctx context.Context, f VersionFilter) ([]TaskVersions, error) {
	// A long window graded by every verdict is read from the run rollup.
	if f.Outcome == "" {
		w, err := r.windowFromRollup(ctx, RunFilter{Project: f.Project, Task: f.Task, Since: f.Since, Until: f.Until}, groupVersion,
			facts{config: true, noAgents: true, noRetries: true})
		if err != nil {
			return nil, err
		}
		if w != nil {
			return r.versionsFromRollup(ctx, f, w)
		}
	}
	byTask := map[string]map[string]*versionAcc{}
	// A version's configuration is its newest run's, dataset case
	// included: the settled runs' cases are read after, for those runs
	// only.
	var caseOf []*versionAcc
	err := r.eachGradedRun(ctx, RunFilter{Project: f.Project, Task: f.Task, Since: f.Since, Until: f.Until}, f.Outcome, facts{fingerprint: true, noAgents: true, noCounts: true, noRetries: true}, runParts{},
		func(run *windowRun, verdict *bool) error {
			versions := byTask[run.Task]
			if versions == nil {
				versions = map[string]*versionAcc{}
				byTask[run.Task] = versions
			}
			fp := run.facts.config.Fingerprint
			acc := versions[fp]
			if acc == nil {
				acc = &versionAcc{v: VersionStats{Fingerprint: fp, Config: run.facts.config, FirstSeen: run.Start, LastSeen: run.Start}}
				versions[fp] = acc
				if run.Settled {
					acc.newest = run.TraceID
					caseOf = append(caseOf, acc)
				}
			}
			acc.add(&run.RunSummary, verdict)
			return nil
		})
	if err != nil {
		return nil, err
	}
	ids, starts := make([]string, len(caseOf)), make([]uint32, len(caseOf))
	for i, acc := range caseOf {
		// The runs come newest first: the newest run's start is the
		// version's last seen.
		ids[i], starts[i] = acc.newest, uint32(acc.v.LastSeen.Unix())
	}
	cases, err := r.settledCases(ctx, f.Project, starts, ids)
	if err != nil {
		return nil, err
	}
	for _, acc := range caseOf {
		acc.v.Config.Case = cases[acc.newest]
	}
	stats := map[string][]VersionStats{}
	for task, versions := range byTask {
		for _, acc := range versions {
			stats[task] = append(stats[task], acc.stats())
		}
	}
	return sortVersions(stats), nil
}

// sortVersions lists tasks' versions: tasks by name, each one's versions
// newest first seen first.
func sortVersions(byTask map[string][]VersionStats) []TaskVersions {
	out := []TaskVersions{}
	for task, versions := range byTask {
		slices.SortFunc(versions, func(a, b VersionStats) int {
			return cmp.Or(b.FirstSeen.Compare(a.FirstSeen), cmp.Compare(a.Fingerprint, b.Fingerprint))
		})
		out = append(out, TaskVersions{Task: task, Versions: versions})
	}
	slices.SortFunc(out, func(a, b TaskVersions) int { return cmp.Compare(a.Task, b.Task) })
	return out
}

// versionAcc sums one version's runs as they stream by: the pass rate by
// verdict, or by status when none of the version's runs has a verdict
// (newSide's rule).
type versionAcc struct {
	v                                  VersionStats // Fingerprint, Config (the newest run's), first and last seen
	newest                             string       // the newest run when settled (its case is read after), else ""
	cost                               float64
	durs                               []float64
	byVerdict, passedByVerdict, okRuns int
}

func (a *versionAcc) add(run *RunSummary, verdict *bool) {
	a.v.Runs++
	a.v.FirstSeen, a.v.LastSeen = minTime(a.v.FirstSeen, run.Start), maxTime(a.v.LastSeen, run.Start)
	a.cost += run.Cost.Total
	a.durs = append(a.durs, run.DurationMs)
	if run.Status != RunError {
		a.okRuns++
	}
	if verdict != nil {
		a.byVerdict++
		if *verdict {
			a.passedByVerdict++
		}
	}
}

func (a *versionAcc) stats() VersionStats {
	v := a.v
	if a.byVerdict > 0 {
		v.Graded, v.Passed = a.byVerdict, a.passedByVerdict
	} else {
		v.Graded, v.Passed = v.Runs, a.okRuns
	}
	v.PassRate = side{graded: v.Graded, passed: v.Passed}.passRate()
	v.CostPerRun = a.cost / float64(v.Runs)
	v.P95Ms = consistency.QuantileOf(a.durs, 0.95)
	return v
}

// versionStats summarizes one version's runs (newest first), as Versions
// does while they stream by.
func versionStats(fp string, runs []versionedRun) VersionStats {
	acc := versionAcc{v: VersionStats{Fingerprint: fp, Config: runs[0].config, FirstSeen: runs[0].Start, LastSeen: runs[0].Start}}
	for _, run := range runs {
		acc.add(run.RunSummary, run.verdict)
	}
	return acc.stats()
}

// CompareSide is one side of a comparison: a version of the task over the
// range, or the task's runs over a time range of their own.
type CompareSide struct {
	Fingerprint string     `json:"fingerprint,omitempty"`
	Since       time.Time  `json:"since,omitzero"`
	Until       time.Time  `json:"until,omitzero"`
	Config      *RunConfig `json:"config,omitempty"`
	FirstSeen   time.Time  `json:"first_seen,omitzero"`
	Runs        int        `json:"runs"`
	Graded      int        `json:"graded"`
	Passed      int        `json:"passed"`
}

// MetricDiff is one metric on both sides: B − A, its relative size, and
// whether it is beyond noise for the samples (Test names the test; none
// for a figure without one). Worse says B is worse than A in the metric's
// direction (HigherIsBetter).
type MetricDiff struct {
	Metric         string   `json:"metric"`
	A              *float64 `json:"a"`
	B              *float64 `json:"b"`
	Diff           *float64 `json:"diff"`
	Relative       *float64 `json:"relative"`
	HigherIsBetter bool     `json:"higher_is_better"`
	Test           string   `json:"test"`
	PValue         *float64 `json:"p_value"`
	Significant    bool     `json:"significant"`
	Worse          bool     `json:"worse"`
}

// Comparison is a task compared between two sides.
type Comparison struct {
	Task    string       `json:"task"`
	A       CompareSide  `json:"a"`
	B       CompareSide  `json:"b"`
	Metrics []MetricDiff `json:"metrics"`
}

// Metric returns the named metric's row, nil when absent.
func (c *Comparison) Metric(name string) *MetricDiff {
	for i := range c.Metrics {
		if c.Metrics[i].Metric == name {
			return &c.Metrics[i]
		}
	}
	return nil
}

// The metrics a comparison holds, in order.
const (
	MetricPassRate       = "pass_rate"
	MetricPassHat3       = "pass_hat_3"
	MetricErrorRate      = "error_rate"
	MetricRetryRate      = "retry_rate"
	MetricCostPerRun     = "cost_per_run"
	MetricCostPerSuccess = "cost_per_success"
	MetricP95Duration    = "p95_duration_ms"
	MetricStepsP50       = "steps_p50"
	MetricTokensP50      = "tokens_p50"
)

// CompareSpec names the two sides: each a version fingerprint (within
// Since..Until) or a time range of its own (ASince..AUntil).
type CompareSpec struct {
	Project      string
	Task         string
	Since, Until time.Time // the range versions are looked for in
	Outcome      string
	A, B         string // fingerprints; "" for a time range
	ASince       time.Time
	AUntil       time.Time
	BSince       time.Time
	BUntil       time.Time
}

// ErrNoRuns is returned when a side of a comparison holds no run.
var ErrNoRuns = errors.New("no runs")

// Compare compares a task between two versions or two time ranges.
func (r OutcomeReader) Compare(ctx context.Context, s CompareSpec) (*Comparison, error) {
	if s.Task == "" {
		return nil, errors.New("task is required")
	}
	side := func(fp string, since, until time.Time) (CompareSide, []versionedRun, error) {
		cs := CompareSide{Fingerprint: fp}
		f := RunFilter{Project: s.Project, Task: s.Task, Since: s.Since, Until: s.Until}
		if fp == "" {
			f.Since, f.Until, cs.Since, cs.Until = since, until, since, until
		}
		runs, err := r.versionedRuns(ctx, f, s.Outcome, true)
		if err != nil {
			return cs, nil, err
		}
		var kept []versionedRun
		for _, run := range runs {
			if fp == "" || run.config.Fingerprint == fp {
				kept = append(kept, run)
			}
		}
		if len(kept) == 0 {
			what := "version " + fp
			if fp == "" {
				what = "range " + since.Format(time.RFC3339) + ".." + until.Format(time.RFC3339)
			}
			return cs, nil, fmt.Errorf("task %s, %s: %w", s.Task, what, ErrNoRuns)
		}
		if fp != "" {
			c := kept[0].config
			cs.Config, cs.FirstSeen = &c, kept[0].Start
			for _, run := range kept {
				cs.FirstSeen = minTime(cs.FirstSeen, run.Start)
			}
		}
		return cs, kept, nil
	}
	a, ra, err := side(s.A, s.ASince, s.AUntil)
	if err != nil {
		return nil, err
	}
	b, rb, err := side(s.B, s.BSince, s.BUntil)
	if err != nil {
		return nil, err
	}
	return compareRuns(s.Task, a, b, graded(ra), graded(rb)), nil
}

// LatestVersionChanges compares, for each task with two versions or more
// in the range, the version first seen last (B) with the one before it
// that ran most (A): what a regression alert watches.
func (r OutcomeReader) LatestVersionChanges(ctx context.Context, project string, since, until time.Time, outcome string) ([]Comparison, error) {
	runs, err := r.versionedRuns(ctx, RunFilter{Project: project, Since: since, Until: until}, outcome, true)
	if err != nil {
		return nil, err
	}
	byTask := byTaskVersion(runs)
	var out []Comparison
	for task, versions := range byTask {
		if len(versions) < 2 {
			continue
		}
		var stats []VersionStats
		for fp, rs := range versions {
			stats = append(stats, versionStats(fp, rs))
		}
		slices.SortFunc(stats, func(a, b VersionStats) int {
			return cmp.Or(b.FirstSeen.Compare(a.FirstSeen), cmp.Compare(a.Fingerprint, b.Fingerprint))
		})
		newest := stats[0]
		prev := stats[1]
		for _, v := range stats[2:] {
			if v.Runs > prev.Runs {
				prev = v
			}
		}
		prevConfig, newConfig := prev.Config, newest.Config
		a := CompareSide{Fingerprint: prev.Fingerprint, Config: &prevConfig, FirstSeen: prev.FirstSeen}
		b := CompareSide{Fingerprint: newest.Fingerprint, Config: &newConfig, FirstSeen: newest.FirstSeen}
		out = append(out, *compareRuns(task, a, b, graded(versions[prev.Fingerprint]), graded(versions[newest.Fingerprint])))
	}
	slices.SortFunc(out, func(x, y Comparison) int { return cmp.Compare(x.Task, y.Task) })
	return out, nil
}

// mean is the mean of v, 0 for none.
func mean(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	sum := 0.0
	for _, x := range v {
		sum += x
	}
	return sum / float64(len(v))
}

// graded is the graded runs of versioned ones.
func graded(runs []versionedRun) []gradedRun {
	out := make([]gradedRun, len(runs))
	for i := range runs {
		out[i] = runs[i].gradedRun
	}
	return out
}

// side holds what a comparison needs of one side's runs.
type side struct {
	runs, graded, passed, errors, toolCalls, retries int
	costs, durs, steps, tokens                       []float64
	gradedCost                                       float64
}

// newSide tallies runs, graded like taskReport: by outcomes when any run
// of the side carries a verdict, else by status.
func newSide(runs []gradedRun) side {
	s := side{runs: len(runs)}
	byStatus := true
	for _, run := range runs {
		if run.verdict != nil {
			byStatus = false
			break
		}
	}
	for _, run := range runs {
		s.costs = append(s.costs, run.Cost.Total)
		s.durs = append(s.durs, run.DurationMs)
		s.steps = append(s.steps, float64(run.LLMCalls+run.ToolCalls))
		s.tokens = append(s.tokens, float64(run.Usage.Input+run.Usage.Output))
		s.toolCalls += run.ToolCalls
		if run.ToolRetries != nil {
			s.retries += *run.ToolRetries
		}
		if run.Status == "error" {
			s.errors++
		}
		verdict := run.verdict
		if byStatus {
			ok := run.Status != "error"
			verdict = &ok
		}
		if verdict == nil {
			continue
		}
		s.graded++
		s.gradedCost += run.Cost.Total
		if *verdict {
			s.passed++
		}
	}
	return s
}

func (s side) passRate() *float64 {
	if s.graded == 0 {
		return nil
	}
	v := float64(s.passed) / float64(s.graded)
	return &v
}

// compareRuns builds the comparison of two sides' runs.
func compareRuns(task string, a, b CompareSide, ra, rb []gradedRun) *Comparison {
	sa, sb := newSide(ra), newSide(rb)
	a.Runs, a.Graded, a.Passed = sa.runs, sa.graded, sa.passed
	b.Runs, b.Graded, b.Passed = sb.runs, sb.graded, sb.passed
	c := &Comparison{Task: task, A: a, B: b}
	ptr := func(v float64) *float64 { return &v }
	ratio := func(n, d int) *float64 {
		if d == 0 {
			return nil
		}
		return ptr(float64(n) / float64(d))
	}
	hat3 := func(s side) *float64 {
		if p, ok := consistency.PassHatK(s.graded, s.passed, 3); ok {
			return ptr(p)
		}
		return nil
	}
	perSuccess := func(s side) *float64 {
		if s.passed == 0 {
			return nil
		}
		return ptr(s.gradedCost / float64(s.passed))
	}
	p95 := func(v []float64) *float64 { return ptr(consistency.QuantileOf(slices.Clone(v), 0.95)) }
	p50 := func(v []float64) *float64 { return ptr(consistency.QuantileOf(slices.Clone(v), 0.5)) }
	fisher := func(x1, n1, x2, n2 int) *float64 {
		if n1 == 0 || n2 == 0 {
			return nil
		}
		return ptr(consistency.FisherExact(x1, n1-x1, x2, n2-x2))
	}
	mw := func(x, y []float64) *float64 { return ptr(consistency.MannWhitney(x, y)) }
	add := func(name string, va, vb *float64, higherBetter bool, test string, p *float64) {
		m := MetricDiff{Metric: name, A: va, B: vb, HigherIsBetter: higherBetter, Test: test, PValue: p}
		if va != nil && vb != nil {
			d := *vb - *va
			m.Diff = &d
			if *va != 0 {
				m.Relative = ptr(d / math.Abs(*va))
			}
			m.Worse = (higherBetter && d < 0) || (!higherBetter && d > 0)
		}
		m.Significant = p != nil && *p < consistency.Significance
		c.Metrics = append(c.Metrics, m)
	}
	add(MetricPassRate, sa.passRate(), sb.passRate(), true, "fisher_exact", fisher(sa.passed, sa.graded, sb.passed, sb.graded))
	add(MetricPassHat3, hat3(sa), hat3(sb), true, "none", nil)
	add(MetricErrorRate, ratio(sa.errors, sa.runs), ratio(sb.errors, sb.runs), false, "fisher_exact", fisher(sa.errors, sa.runs, sb.errors, sb.runs))
	add(MetricRetryRate, ratio(sa.retries, sa.toolCalls), ratio(sb.retries, sb.toolCalls), false, "fisher_exact",
		fisher(sa.retries, sa.toolCalls, sb.retries, sb.toolCalls))
	add(MetricCostPerRun, ptr(mean(sa.costs)), ptr(mean(sb.costs)),
		false, "mann_whitney", mw(sa.costs, sb.costs))
	add(MetricCostPerSuccess, perSuccess(sa), perSuccess(sb), false, "none", nil)
	add(MetricP95Duration, p95(sa.durs), p95(sb.durs), false, "mann_whitney", mw(sa.durs, sb.durs))
	add(MetricStepsP50, p50(sa.steps), p50(sb.steps), false, "mann_whitney", mw(sa.steps, sb.steps))
	add(MetricTokensP50, p50(sa.tokens), p50(sb.tokens), false, "mann_whitney", mw(sa.tokens, sb.tokens))
	return c
}

// LatestPeriodChanges compares, for each task that ran in both, the
// period [until − window, until) (B) with the one of the same length
// before it (A): what a period regression alert watches.
func (r OutcomeReader) LatestPeriodChanges(ctx context.Context, project string, window time.Duration, until time.Time, outcome string) ([]Comparison, error) {
	mid, since := until.Add(-window), until.Add(-2*window)
	// The run list's until is inclusive; the period is not.
	runs, err := r.gradedRuns(ctx, RunFilter{Project: project, Since: since, Until: until.Add(-time.Nanosecond)}, outcome, facts{retries: true})
	if err != nil {
		return nil, err
	}
	type halves struct{ before, last []gradedRun }
	byTask := map[string]*halves{}
	for _, run := range runs {
		h := byTask[run.Task]
		if h == nil {
			h = &halves{}
			byTask[run.Task] = h
		}
		if run.Start.Before(mid) {
			h.before = append(h.before, run)
		} else {
			h.last = append(h.last, run)
		}
	}
	var out []Comparison
	for task, h := range byTask {
		if len(h.before) == 0 || len(h.last) == 0 {
			continue
		}
		a := CompareSide{Since: since, Until: mid}
		b := CompareSide{Since: mid, Until: until}
		out = append(out, *compareRuns(task, a, b, h.before, h.last))
	}
	slices.SortFunc(out, func(x, y Comparison) int { return cmp.Compare(x.Task, y.Task) })
	return out, nil
}
