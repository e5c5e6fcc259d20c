package query

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/tallyhq/tally/consistency"
)

// TaskFilter selects the runs a consistency report covers and how they are
// graded. Zero fields take the defaults given.
type TaskFilter struct {
	Project      string
	Since, Until time.Time // on the run's start
	Task, Agent  string    // only these runs
	// By groups the runs: "task" (the default), "agent" (a run counts for
	// every agent it ran) or "case" (the dataset case a run tried:
	// CaseAttribute; runs without one are left out).
	By string
	// Outcome names the outcome whose verdict grades a run; "" grades by
	// every outcome with a verdict (a run passes when all of them passed).
	Outcome string
	// MaxK is the largest k of pass@k and pass^k (default 5, at most 20).
	MaxK int
	// BudgetMultiple: a passing run using more tokens than this many times
	// the median of the passing runs is counted as over budget (default 3).
	BudgetMultiple float64
	// MaxRuns, when above 0, is the most runs read (the newest first); a
	// range with more is reported on its newest, Truncated set. By default
	// every run of the range is read.
	MaxRuns int
}

// Defaults and bounds of TaskFilter.
const (
	DefaultMaxK           = 5
	MaxMaxK               = 20
	DefaultBudgetMultiple = 3
)

// TaskReport is how consistent one task (or agent) is over its runs.
//
// A run is graded by its outcomes' verdicts (TaskFilter.Outcome). In a
// group where no run carries a verdict, runs are graded by their status
// (ok passes, error fails) and VerdictsFrom says "status"; otherwise runs
// without a verdict are counted as Ungraded and left out of the pass
// figures. PassAtK and PassHatK are keyed by k = 1…min(MaxK, Graded), the
// unbiased estimators from Graded trials with Passed successes (package
// consistency).
type TaskReport struct {
	// Key is what the runs are grouped by: the task, agent or case; Task
	// repeats it when grouped by task.
	Key          string             `json:"key"`
	Task         string             `json:"task,omitempty"`
	Runs         int                `json:"runs"`
	Graded       int                `json:"graded"`
	Ungraded     int                `json:"ungraded"`
	Passed       int                `json:"passed"`
	Failed       int                `json:"failed"`
	PassRate     *float64           `json:"pass_rate"`
	VerdictsFrom string             `json:"verdicts_from"` // "outcomes" or "status"
	PassAtK      map[string]float64 `json:"pass_at_k"`
	PassHatK     map[string]float64 `json:"pass_hat_k"`
	// Steps are a run's LLM and tool calls; Tokens its input and output
	// tokens; CostUSD and DurationMs its cost and wall clock.
	Steps      consistency.Spread `json:"steps"`
	Tokens     consistency.Spread `json:"tokens"`
	CostUSD    consistency.Spread `json:"cost_usd"`
	DurationMs consistency.Spread `json:"duration_ms"`
	// CostPerRun is the mean cost; CostPerSuccess the total cost of the
	// graded runs over the passes (what one success costs, failures paid).
	CostPerRun     float64  `json:"cost_per_run"`
	CostPerSuccess *float64 `json:"cost_per_success"`
	// BudgetTokens is BudgetMultiple × the passes' median tokens;
	// OverBudgetPasses the passes above it, OverBudgetShare their share.
	BudgetTokens     float64  `json:"budget_tokens"`
	OverBudgetPasses int      `json:"over_budget_passes"`
	OverBudgetShare  *float64 `json:"over_budget_share"`
	FailedRuns       []string `json:"failed_runs"` // up to 5, newest first
}

// TasksReport is the answer of Tasks.
type TasksReport struct {
	By        string    `json:"by"`
	Outcome   string    `json:"outcome,omitempty"`
	Since     time.Time `json:"since,omitzero"`
	Until     time.Time `json:"until,omitzero"`
	RunsRead  int       `json:"runs_read"`
	Truncated bool      `json:"truncated,omitempty"`
	// Quantiles says where the percentiles (p50, p99, the budget's
	// median) come from: every run's value (QuantilesExact), or the run
	// rollup's sketches (QuantilesSketch, within 1%) for a window of more
	// runs than the reader reads one by one (WithWindowExactRuns). Counts,
	// means, maxima, variations and the runs named are exact either way,
	// but for the passes over budget: from the sketch, a pass within 1% of
	// the budget may count on the wrong side of it.
	Quantiles string       `json:"quantiles"`
	Tasks     []TaskReport `json:"tasks"`
}

// Tasks reports how consistent each task (or agent) is over the runs
// that started in the filter's range, most runs first.
func (r OutcomeReader) Tasks(ctx context.Context, f TaskFilter) (*TasksReport, error) {
	if f.By == "" {
		f.By = "task"
	}
	if f.By != "task" && f.By != "agent" && f.By != "case" {
		return nil, fmt.Errorf("by %q: want task, agent or case", f.By)
	}
	f.MaxK = cmp.Or(f.MaxK, DefaultMaxK)
	if f.MaxK < 1 || f.MaxK > MaxMaxK {
		return nil, fmt.Errorf("k %d: want 1 to %d", f.MaxK, MaxMaxK)
	}
	if f.BudgetMultiple == 0 {
		f.BudgetMultiple = DefaultBudgetMultiple
	}
	runs := RunFilter{Project: f.Project, Since: f.Since, Until: f.Until, Task: f.Task, Agent: f.Agent}
	// A long window of runs graded by every verdict is read from the run
	// rollup; one graded by a named outcome, by dataset case or bounded
	// to its newest runs is read run by run.
	if f.Outcome == "" && f.By != "case" && f.MaxRuns == 0 {
		by := groupTask
		if f.By == "agent" {
			by = groupAgent
		}
		w, err := r.windowFromRollup(ctx, runs, by, facts{approvals: true, noAgents: f.By != "agent", noRetries: true})
		if err != nil {
			return nil, err
		}
		if w != nil {
			return r.tasksFromRollup(ctx, f, w)
		}
	}
	rep := &TasksReport{By: f.By, Outcome: f.Outcome, Since: f.Since, Until: f.Until, Quantiles: QuantilesExact, Tasks: []TaskReport{}}
	// The runs stream by (eachGradedRun), each kept as the few figures a
	// task's report reads of it: a window's summaries are never held.
	groups := map[string][]taskRun{}
	err := r.eachGradedRun(ctx, runs,
		f.Outcome, facts{config: f.By == "case", noAgents: f.By != "agent", noRetries: true}, runParts{}, func(g *windowRun, verdict *bool) error {
			if f.MaxRuns > 0 && rep.RunsRead == f.MaxRuns {
				rep.Truncated = true
				return errEnough
			}
			rep.RunsRead++
			tr := taskRunOf(&g.RunSummary, verdict)
			switch f.By {
			case "agent":
				for _, k := range g.Agents {
					groups[k] = append(groups[k], tr)
				}
			case "case":
				if c := g.facts.config.Case; c != "" {
					groups[c] = append(groups[c], tr)
				}
			default:
				groups[g.Task] = append(groups[g.Task], tr)
			}
			return nil
		})
	if err != nil && !errors.Is(err, errEnough) {
		return nil, err
	}
	for key, rs := range groups {
		t := taskReport(key, rs, f)
		if f.By == "task" {
			t.Task = key
		}
		rep.Tasks = append(rep.Tasks, t)
	}
	sortTasks(rep.Tasks)
	return rep, nil
}

// sortTasks orders a report's groups: most runs first, then by key.
func sortTasks(tasks []TaskReport) {
	slices.SortFunc(tasks, func(a, b TaskReport) int {
		return cmp.Or(cmp.Compare(b.Runs, a.Runs), cmp.Compare(a.Key, b.Key))
	})
}

// gradedRun is one run with its verdict and its facts. It points at the
// run's summary, which the reports group and regroup: a window holds many
// runs, and copies of each would be most of a report's memory.
type gradedRun struct {
	*RunSummary
	verdict *bool // nil: no outcome verdict
	facts   *runFacts
}

// facts says which facts a report needs: configurations, tool retries,
// approvals (active time and waits), the safety review (steps and
// signals), the spans' outcomes. Settled runs bring them from the run
// table (where retries are always read); live runs' are read from their
// spans.
//
// fingerprint is config without the settled runs' dataset cases (each
// case is read out of the run's configuration JSON, the costliest column
// of the read): the fingerprint's configuration, its Case empty for a
// settled run; a report that shows the case of a few runs reads it after
// (settledCases).
//
// noAgents, noCounts and noRetries leave out of the settled runs'
// summaries what a report does not use (zero): the agents; the calls and
// the input and output tokens; the retries and repeats. At 7 days (117k
// runs) those seven columns were 60 of the settled read's 137 ms on 18.16.
type facts struct {
	config, fingerprint, retries, approvals, review, outcomes bool
	noAgents, noCounts, noRetries                             bool
}

// configs reports whether a report wants the runs' configurations, with
// their cases (config) or without (fingerprint).
func (w facts) configs() bool { return w.config || w.fingerprint }

// gradedRuns reads the runs f selects (newest first) with their verdicts
// by the named outcome (RunVerdict) and the facts want names, held at once
// for the reports that regroup them (comparisons); the others aggregate as
// the runs stream by (eachGradedRun).
func (r *core) gradedRuns(ctx context.Context, f RunFilter, outcome string, want facts) ([]gradedRun, error) {
	// Runs are kept in blocks that never move (a growing slice of a whole
	// window's runs would copy them all again at each doubling), and
	// pointed at.
	const block = 4096
	var out []gradedRun
	var chunk []windowRun
	err := r.eachGradedRun(ctx, f, outcome, want, runParts{}, func(run *windowRun, verdict *bool) error {
		if len(chunk) == cap(chunk) {
			chunk = make([]windowRun, 0, block)
		}
		chunk = append(chunk, *run)
		kept := &chunk[len(chunk)-1]
		// The stream reuses a settled run's agents, counts and facts for
		// the next run: what is kept is copied.
		kept.Agents = slices.Clone(run.Agents)
		kept.ToolRetries, kept.ToolRepeats = cloneInt(run.ToolRetries), cloneInt(run.ToolRepeats)
		if run.facts != nil {
			f := *run.facts
			f.steps, f.signals, f.outcomes = slices.Clone(f.steps), slices.Clone(f.signals), slices.Clone(f.outcomes)
			kept.facts = &f
		}
		out = append(out, gradedRun{RunSummary: &kept.RunSummary, verdict: verdict, facts: kept.facts})
		return nil
	})
	return out, err
}

// runsExtent lists n runs' trace ids (at(i) is the i-th run) and the
// range their spans start in — from the earliest run's start to the latest
// run's end — for the reads that name runs and prune by start.
func runsExtent(n int, at func(int) *RunSummary) (ids []string, lo, hi time.Time) {
	ids = make([]string, n)
	for i := range n {
		run := at(i)
		ids[i] = run.TraceID
		if i == 0 {
			lo, hi = run.Start, run.End
		}
		lo, hi = minTime(lo, run.Start), maxTime(hi, run.End)
	}
	return ids, lo, hi
}

// RunVerdict is a run's verdict from its outcomes: with name, that
// outcome's; else every outcome with a verdict — failed if any failed.
// nil when none has a verdict.
func RunVerdict(outcomes []Outcome, name string) *bool {
	var v *bool
	for _, o := range outcomes {
		if o.Passed == nil || (name != "" && o.Name != name) {
			continue
		}
		p := *o.Passed
		if v == nil || !p {
			v = &p
		}
		if !p {
			break
		}
	}
	return v
}

// errEnough stops a stream of runs a report has read enough of.
var errEnough = errors.New("enough runs")

// taskRun is what a task's report reads of one run.
type taskRun struct {
	traceID                    string
	steps, tokens, cost, durMs float64
	ok                         bool // the run did not fail
	verdict                    int8 // -1 failed, 1 passed, 0 no outcome verdict
}

func taskRunOf(run *RunSummary, verdict *bool) taskRun {
	return taskRun{traceID: run.TraceID, steps: float64(run.LLMCalls + run.ToolCalls), tokens: float64(run.Usage.Input + run.Usage.Output),
		cost: run.Cost.Total, durMs: run.DurationMs, ok: run.Status != RunError, verdict: gradeOf(verdict)}
}

// gradeOf is a verdict as taskRun.verdict holds it.
func gradeOf(verdict *bool) int8 {
	switch {
	case verdict == nil:
		return 0
	case *verdict:
		return 1
	}
	return -1
}

// setPassEstimates sets t's pass rate, pass@k and pass^k (k = 1…min(maxK,
// Graded)) from its graded runs and their passes.
func (t *TaskReport) setPassEstimates(maxK int) {
	if t.Graded == 0 {
		return
	}
	rate := float64(t.Passed) / float64(t.Graded)
	t.PassRate = &rate
	for k := 1; k <= min(maxK, t.Graded); k++ {
		at, _ := consistency.PassAtK(t.Graded, t.Passed, k)
		hat, _ := consistency.PassHatK(t.Graded, t.Passed, k)
		t.PassAtK[strconv.Itoa(k)], t.PassHatK[strconv.Itoa(k)] = at, hat
	}
}

// taskReport computes one group's figures from its runs (newest first).
func taskReport(key string, runs []taskRun, f TaskFilter) TaskReport {
	t := TaskReport{Key: key, Runs: len(runs), VerdictsFrom: "status", PassAtK: map[string]float64{}, PassHatK: map[string]float64{},
		FailedRuns: []string{}}
	for _, run := range runs {
		if run.verdict != 0 {
			t.VerdictsFrom = "outcomes"
			break
		}
	}
	var steps, tokens, costs, durs, passTokens []float64
	gradedCost := 0.0
	for _, run := range runs {
		steps = append(steps, run.steps)
		tokens = append(tokens, run.tokens)
		costs = append(costs, run.cost)
		durs = append(durs, run.durMs)
		verdict := run.verdict
		if t.VerdictsFrom == "status" {
			verdict = -1
			if run.ok {
				verdict = 1
			}
		}
		if verdict == 0 {
			t.Ungraded++
			continue
		}
		t.Graded++
		gradedCost += run.cost
		if verdict > 0 {
			t.Passed++
			passTokens = append(passTokens, run.tokens)
		} else {
			t.Failed++
			if len(t.FailedRuns) < 5 {
				t.FailedRuns = append(t.FailedRuns, run.traceID)
			}
		}
	}
	t.setPassEstimates(f.MaxK)
	if t.Passed > 0 {
		per := gradedCost / float64(t.Passed)
		t.CostPerSuccess = &per
		t.BudgetTokens = f.BudgetMultiple * consistency.QuantileOf(slices.Clone(passTokens), 0.5)
		for _, tok := range passTokens {
			if tok > t.BudgetTokens {
				t.OverBudgetPasses++
			}
		}
		share := float64(t.OverBudgetPasses) / float64(t.Passed)
		t.OverBudgetShare = &share
	}
	t.Steps, t.Tokens, t.CostUSD, t.DurationMs = consistency.SpreadOf(steps), consistency.SpreadOf(tokens),
		consistency.SpreadOf(costs), consistency.SpreadOf(durs)
	t.CostPerRun = t.CostUSD.Mean
	return t
}
