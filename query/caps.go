package query

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tallyhq/tally/consistency"
	"github.com/tallyhq/tally/safety"
)

// CapsFilter selects the runs GET /caps sets caps from: those that
// started in the range, of a task or agent.
type CapsFilter struct {
	Project      string
	Since, Until time.Time
	Task, Agent  string
	// Outcome names the outcome whose verdict makes a run successful (as
	// TaskFilter.Outcome); with no verdicts in a task, runs that ended ok.
	Outcome string
	// Multiplier is how many times the successful runs' p99 a suggested
	// cap is (default DefaultCapMultiplier; 1 to 10).
	Multiplier float64
}

// DefaultCapMultiplier is the playbooks' "2–3× the p99 of successful
// runs", at its middle.
const DefaultCapMultiplier = 2.5

// CapFigure is one measure of a task's successful runs: its p50 and p99,
// the suggested cap (Multiplier × p99, rounded up) and how many of the
// task's runs — successful or not — went over it.
type CapFigure struct {
	P50       float64 `json:"p50"`
	P99       float64 `json:"p99"`
	Suggested float64 `json:"suggested"`
	Exceeded  int     `json:"exceeded"`
}

// TaskCaps are one task's figures and suggested caps.
type TaskCaps struct {
	Task         string `json:"task"`
	Runs         int    `json:"runs"`
	Successful   int    `json:"successful"`
	VerdictsFrom string `json:"verdicts_from"` // "outcomes" or "status"
	// Iterations are model calls, ToolCalls tool calls, Tokens input and
	// output tokens, CostUSD the counted cost, ActiveMs the wall clock less
	// the waits for approval.
	Iterations CapFigure `json:"iterations"`
	ToolCalls  CapFigure `json:"tool_calls"`
	Tokens     CapFigure `json:"tokens"`
	CostUSD    CapFigure `json:"cost_usd"`
	ActiveMs   CapFigure `json:"active_ms"`
	// Waits for approval are reported apart: how many runs waited, and the
	// waits' spread (ms) over those runs.
	RunsWaiting int                `json:"runs_waiting"`
	WaitMs      consistency.Spread `json:"wait_ms"`
	// ExceededRuns are the newest runs (up to 5) over any suggested cap,
	// Exceeded how many there are.
	Exceeded     int      `json:"exceeded"`
	ExceededRuns []string `json:"exceeded_runs"`
	// Spec is the suggested caps as a --run-cap value ("" when the task's
	// name cannot be written in one: empty, or with white space, "=", ","
	// or a quote);
	// Configured the --run-cap caps that apply to the task now.
	Spec       string   `json:"spec"`
	Configured []string `json:"configured"`
	// FewRuns: fewer than 20 successful runs, so p99 is about their maximum.
	FewRuns bool `json:"few_runs,omitempty"`
}

// CapsReport is the answer of Caps: tasks with successful runs, most runs
// first.
type CapsReport struct {
	Since      time.Time `json:"since,omitzero"`
	Until      time.Time `json:"until,omitzero"`
	Multiplier float64   `json:"multiplier"`
	RunsRead   int       `json:"runs_read"`
	Truncated  bool      `json:"truncated,omitempty"`
	// Quantiles says where the p50s and p99s come from (as
	// TasksReport.Quantiles); the runs over the caps are counted exactly.
	Quantiles string     `json:"quantiles"`
	Tasks     []TaskCaps `json:"tasks"`
}

// capMeasures are the measures of a run caps are set on, in the order of
// a --run-cap spec.
var capMeasures = []string{"iterations", "tool_calls", "tokens", "cost", "wall"}

// Caps reads the runs f selects with their verdicts and approvals (only
// those: not the whole safety review), and per task sets caps from the
// successful runs.
func (r ReviewReader) Caps(ctx context.Context, f CapsFilter) (*CapsReport, error) {
	f.Multiplier = cmp.Or(f.Multiplier, DefaultCapMultiplier)
	if !(f.Multiplier >= 1 && f.Multiplier <= 10) {
		return nil, fmt.Errorf("multiplier %v: want 1 to 10", f.Multiplier)
	}
	runs := RunFilter{Project: f.Project, Since: f.Since, Until: f.Until, Task: f.Task, Agent: f.Agent}
	// A long window graded by every verdict is read from the run rollup.
	if f.Outcome == "" {
		w, err := r.windowFromRollup(ctx, runs, groupTask, facts{approvals: true, noAgents: true, noRetries: true})
		if err != nil {
			return nil, err
		}
		if w != nil {
			return r.capsFromRollup(ctx, f, w)
		}
	}
	rep := &CapsReport{Since: f.Since, Until: f.Until, Multiplier: f.Multiplier, Quantiles: QuantilesExact, Tasks: []TaskCaps{}}
	// The runs stream by (eachGradedRun), each kept as its measures.
	byTask := map[string][]capRun{}
	var order []string
	err := r.eachGradedRun(ctx, runs,
		f.Outcome, facts{approvals: true, noAgents: true, noRetries: true}, runParts{}, func(g *windowRun, verdict *bool) error {
			rep.RunsRead++
			if byTask[g.Task] == nil {
				order = append(order, g.Task)
			}
			c := capRun{traceID: g.TraceID, ok: g.Status != RunError, verdict: gradeOf(verdict)}
			c.measures, c.waitMs = runMeasures(&g.RunSummary, g.facts)
			byTask[g.Task] = append(byTask[g.Task], c)
			return nil
		})
	if err != nil {
		return nil, err
	}
	for _, task := range order {
		tc := taskCaps(task, byTask[task], f.Multiplier)
		tc.Configured = r.configuredCaps(f.Project, task)
		if tc.Successful > 0 {
			rep.Tasks = append(rep.Tasks, tc)
		}
	}
	sortCaps(rep.Tasks)
	return rep, nil
}

// configuredCaps are the --run-cap caps that apply to project's task now.
func (r ReviewReader) configuredCaps(project, task string) []string {
	out := []string{}
	for _, c := range r.caps.List() {
		if (c.Project == "" || c.Project == project) && (c.Task == "" || c.Task == task) && c.Agent == "" {
			out = append(out, capSpec(c))
		}
	}
	return out
}

// sortCaps orders a report's tasks: most runs first, then by name.
func sortCaps(tasks []TaskCaps) {
	slices.SortStableFunc(tasks, func(a, b TaskCaps) int { return cmp.Or(cmp.Compare(b.Runs, a.Runs), cmp.Compare(a.Task, b.Task)) })
}

// runMeasures are one run's values of capMeasures (wall: active ms) and
// its approval wait, ms, from its facts (settled, or read from its spans).
func runMeasures(run *RunSummary, f *runFacts) (values [5]float64, waitMs float64) {
	active := time.Duration(run.DurationMs * float64(time.Millisecond))
	if f != nil {
		active, waitMs = time.Duration(f.activeNs), float64(f.waitNs)/1e6
	}
	return [5]float64{float64(run.LLMCalls), float64(run.ToolCalls), float64(run.Usage.Input + run.Usage.Output),
		run.Cost.Total, float64(active) / float64(time.Millisecond)}, waitMs
}

// capRun is what a task's caps read of one run.
type capRun struct {
	traceID  string
	measures [5]float64 // capMeasures
	waitMs   float64
	ok       bool // the run did not fail
	verdict  int8 // as taskRun.verdict
}

// taskCaps computes one task's caps from its runs (newest first).
func taskCaps(task string, runs []capRun, multiplier float64) TaskCaps {
	tc := TaskCaps{Task: task, Runs: len(runs), VerdictsFrom: "status", ExceededRuns: []string{}, Configured: []string{}}
	for _, g := range runs {
		if g.verdict != 0 {
			tc.VerdictsFrom = "outcomes"
			break
		}
	}
	var ok [5][]float64
	var waits []float64
	for i := range runs {
		g := &runs[i]
		if g.waitMs > 0 {
			tc.RunsWaiting++
			waits = append(waits, g.waitMs)
		}
		success := g.verdict > 0
		if tc.VerdictsFrom == "status" {
			success = g.ok
		}
		if success {
			tc.Successful++
			for m := range ok {
				ok[m] = append(ok[m], g.measures[m])
			}
		}
	}
	tc.WaitMs = consistency.SpreadOf(waits)
	tc.FewRuns = tc.Successful < 20
	figures := []*CapFigure{&tc.Iterations, &tc.ToolCalls, &tc.Tokens, &tc.CostUSD, &tc.ActiveMs}
	for m, fig := range figures {
		s := consistency.SpreadOf(ok[m])
		fig.P50, fig.P99 = s.P50, s.P99
		fig.Suggested = roundUp(m, multiplier*s.P99)
	}
	for i := range runs {
		over := false
		for m, fig := range figures {
			if fig.Suggested > 0 && runs[i].measures[m] > fig.Suggested {
				fig.Exceeded++
				over = true
			}
		}
		if over {
			tc.Exceeded++
			if len(tc.ExceededRuns) < 5 {
				tc.ExceededRuns = append(tc.ExceededRuns, runs[i].traceID)
			}
		}
	}
	tc.Spec = suggestedSpec(task, figures)
	return tc
}

// roundUp rounds a suggested cap up: counts to whole numbers, cost to a
// hundredth of a cent, active time to whole seconds (ms).
func roundUp(measure int, v float64) float64 {
	switch capMeasures[measure] {
	case "cost":
		return math.Ceil(v*1e4) / 1e4
	case "wall":
		return math.Ceil(v/1000) * 1000
	}
	return math.Ceil(v)
}

// suggestedSpec writes the suggested caps as a --run-cap value (tool
// calls are not a cap of their own: runaway_loop's --signal-max-steps
// bounds them).
func suggestedSpec(task string, figs []*CapFigure) string {
	// The flag is a comma-separated list (quotes for CSV) of space-separated
	// KEY=VALUE fields: a name with a separator in it cannot be written.
	if task == "" || len(strings.Fields(task)) != 1 || strings.ContainsAny(task, "=,\"") {
		return "" // not writable as a --run-cap selector
	}
	parts := []string{"task=" + task}
	if v := figs[0].Suggested; v > 0 {
		parts = append(parts, "iterations="+strconv.FormatFloat(v, 'f', 0, 64))
	}
	if v := figs[2].Suggested; v > 0 {
		parts = append(parts, "tokens="+strconv.FormatFloat(v, 'f', 0, 64))
	}
	if v := figs[3].Suggested; v > 0 {
		parts = append(parts, "cost="+strconv.FormatFloat(v, 'f', -1, 64))
	}
	if v := figs[4].Suggested; v > 0 {
		parts = append(parts, "wall="+(time.Duration(v)*time.Millisecond).String())
	}
	return strings.Join(parts, " ")
}

// capSpec writes a configured cap back as its --run-cap value.
func capSpec(c safety.Cap) string {
	var parts []string
	for _, kv := range [][2]string{{"project", c.Project}, {"task", c.Task}, {"agent", c.Agent}} {
		if kv[1] != "" {
			parts = append(parts, kv[0]+"="+kv[1])
		}
	}
	if c.Iterations > 0 {
		parts = append(parts, "iterations="+strconv.Itoa(c.Iterations))
	}
	if c.Tokens > 0 {
		parts = append(parts, "tokens="+strconv.FormatUint(c.Tokens, 10))
	}
	if c.CostUSD > 0 {
		parts = append(parts, "cost="+strconv.FormatFloat(c.CostUSD, 'f', -1, 64))
	}
	if c.Active > 0 {
		parts = append(parts, "wall="+c.Active.String())
	}
	return strings.Join(parts, " ")
}
