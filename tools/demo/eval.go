package demo

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// The evaluation experiment that follows the traffic (Generate): an
// evaluation harness tries EvalCases cases of every task (the first topics
// of the task), each EvalTrials times, with the agents in production
// (version 1); for code_fix it tries the candidate coder 1.5.0 (version 2)
// on the same cases alongside. An evaluator grades every trial, and Send
// posts its verdict to tally (POST /api/v1/runs/{trace_id}/outcomes).
//
// So tally's Tasks page shows pass@k and pass^k per case
// (GET /tasks?by=case groups by CaseAttribute), and its Compare page shows
// code_fix's two versions: every run of a version has the same
// configuration (the same agents and models, no summarizer), and version
// 2 — coder@1.5.0 in the configuration's agent versions — solves fewer
// cases (1 of 6 against 5 of 6) with more steps, tokens and cost.
const (
	// EvalMinRuns is the least Config.Runs the experiment follows.
	EvalMinRuns = 20
	// EvalCases is the cases per task, EvalTrials the trials per case and
	// version.
	EvalCases  = 2
	EvalTrials = 3
	// EvalRuns is the runs of the experiment: EvalCases × EvalTrials for
	// each task, and again for code_fix's version 2.
	EvalRuns = 5 * EvalCases * EvalTrials
)

// CaseAttribute is the root span attribute naming the case an evaluation
// run tried: Langfuse's experiment item id, which tally groups by.
const CaseAttribute = "langfuse.experiment.item.id"

// OutcomeName is the name of the outcome an evaluation run's verdict is
// posted under; the traffic's runs carry their verdicts under the same
// name as gen_ai.evaluation.result events.
const OutcomeName = "task_success"

// Trial is an evaluation run: which case it tried, with which version of
// its task's agents, and the evaluator's verdict.
type Trial struct {
	// Case is the case's id (CaseAttribute), e.g. code_fix-02.
	Case string
	// Version is 1 for the agents in production, 2 for the candidate.
	Version int
	// Attempt numbers the trials of a case and version from 1.
	Attempt int
	// Passed is the verdict Send posts (OutcomeName, source "eval").
	Passed bool
}

// evalPlan is the experiment's tasks in the order they are run, and their
// verdicts by version (index 0 is version 1), case and trial.
var evalPlan = []struct {
	task     string
	verdicts [][EvalCases][EvalTrials]bool
}{
	{"triage_ticket", [][EvalCases][EvalTrials]bool{{{true, true, true}, {true, false, true}}}},
	{"answer_question", [][EvalCases][EvalTrials]bool{{{true, true, false}, {true, true, true}}}},
	{"research_report", [][EvalCases][EvalTrials]bool{{{true, true, true}, {false, true, true}}}},
	{"code_fix", [][EvalCases][EvalTrials]bool{
		{{true, true, true}, {true, false, true}},     // coder 1.4.0: 5 of 6
		{{false, true, false}, {false, false, false}}, // coder 1.5.0: 1 of 6
	}},
}

// evalGap is the time between the starts of two trials: the harness runs
// several at once.
const evalGap = 20 * time.Second

// evalRuns builds the experiment, starting two minutes after the last of
// the traffic's runs ended: for each task, case and trial, a run of each
// version, evalGap apart. Run j draws from PCG stream evalStream+j.
func evalRuns(seed int64, traffic []Run) []Run {
	var last time.Time
	for _, r := range traffic {
		if r.Root.End.After(last) {
			last = r.Root.End
		}
	}
	at := last.Add(2 * time.Minute)
	out := make([]Run, 0, EvalRuns)
	for _, p := range evalPlan {
		a, tk := taskByName(p.task)
		for c := range EvalCases {
			for k := range EvalTrials {
				for v, verdicts := range p.verdicts {
					j := uint64(len(out))
					trial := &Trial{Case: fmt.Sprintf("%s-%02d", p.task, c+1), Version: v + 1, Attempt: k + 1, Passed: verdicts[c][k]}
					conv := conversation{app: a, task: tk, topic: tk.topics[c], trial: trial}
					rng := rand.New(rand.NewPCG(uint64(seed), evalStream+j))
					out = append(out, buildRun(rng, conv, 0, at, 0, extras{side: rng}))
					at = at.Add(evalGap)
				}
			}
		}
	}
	return out
}

// taskByName finds a task and its app.
func taskByName(name string) (*app, *task) {
	for i := range apps {
		for j := range apps[i].tasks {
			if apps[i].tasks[j].name == name {
				return &apps[i], &apps[i].tasks[j]
			}
		}
	}
	panic("demo: no task " + name)
}
