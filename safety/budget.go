package safety

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// IncompleteAttribute is the span attribute a run declares a typed
// partial result with: it stopped at a limit (iteration_limit,
// token_limit, time_limit, budget_limit…) and returned what it had.
const IncompleteAttribute = "tally.run.incomplete"

// IncompleteErrors are error types frameworks end a run at their
// iteration limit with, and the partial result each means: the OpenAI
// Agents SDK's MaxTurnsExceeded and LangGraph's GraphRecursionError.
var IncompleteErrors = map[string]string{
	"MaxTurnsExceeded":    "iteration_limit",
	"GraphRecursionError": "iteration_limit",
}

// Incomplete is a typed partial result: the span that declared it and
// what limit it stopped at.
type Incomplete struct {
	SpanID  string
	StartNs uint64
	Reason  string
}

// Cap is one configured budget for runs: of a project (or all), of a task
// or an agent (or all runs); zero limits are not checked.
type Cap struct {
	Project, Task, Agent string
	Iterations           int     // inference calls
	Tokens               uint64  // counted input + output tokens
	CostUSD              float64 // counted cost
	Active               time.Duration
}

// Caps are the configured caps (tally serve --run-cap).
type Caps struct {
	caps []Cap
}

// List returns the caps in the order configured.
func (c *Caps) List() []Cap {
	if c == nil {
		return nil
	}
	return slices.Clone(c.caps)
}

// ParseCaps reads caps written as space-separated key=value pairs:
// project=, task= or agent= select runs (none: every run), iterations=,
// tokens=, cost= (USD) and wall= (a duration of active time: waits for
// approval excluded) are the limits, at least one of them.
func ParseCaps(specs []string) (*Caps, error) {
	out := &Caps{}
	for _, spec := range specs {
		var c Cap
		limits := 0
		for _, field := range strings.Fields(spec) {
			k, v, ok := strings.Cut(field, "=")
			if !ok || v == "" {
				return nil, fmt.Errorf("run cap %q: %q is not key=value", spec, field)
			}
			var err error
			switch k {
			case "project":
				c.Project = v
			case "task":
				c.Task = v
			case "agent":
				c.Agent = v
			case "iterations":
				c.Iterations, err = strconv.Atoi(v)
				if err == nil && c.Iterations <= 0 {
					err = fmt.Errorf("must be positive")
				}
				limits++
			case "tokens":
				c.Tokens, err = strconv.ParseUint(v, 10, 64)
				if err == nil && c.Tokens == 0 {
					err = fmt.Errorf("must be positive")
				}
				limits++
			case "cost":
				c.CostUSD, err = strconv.ParseFloat(strings.TrimPrefix(v, "$"), 64)
				if err == nil && !(c.CostUSD > 0) {
					err = fmt.Errorf("must be positive")
				}
				limits++
			case "wall":
				c.Active, err = time.ParseDuration(v)
				if err == nil && c.Active <= 0 {
					err = fmt.Errorf("must be positive")
				}
				limits++
			default:
				return nil, fmt.Errorf("run cap %q: unknown key %q (project, task, agent, iterations, tokens, cost, wall)", spec, k)
			}
			if err != nil {
				return nil, fmt.Errorf("run cap %q: %s: %w", spec, k, err)
			}
		}
		if c.Task != "" && c.Agent != "" {
			return nil, fmt.Errorf("run cap %q: a cap selects a task or an agent, not both", spec)
		}
		if limits == 0 {
			return nil, fmt.Errorf("run cap %q: no limit (iterations, tokens, cost or wall)", spec)
		}
		out.caps = append(out.caps, c)
	}
	return out, nil
}

// applies reports whether the cap selects the run.
func (c *Cap) applies(run *Run) bool {
	return (c.Project == "" || c.Project == run.Project) && (c.Task == "" || c.Task == run.Task) &&
		(c.Agent == "" || slices.Contains(run.Agents, c.Agent))
}

// name says what the cap is for, in reasons.
func (c *Cap) name() string {
	switch {
	case c.Task != "":
		return "task " + c.Task + "'s"
	case c.Agent != "":
		return "agent " + c.Agent + "'s"
	}
	return "the run"
}

// budgetSignals raises budget_exceeded for each cap the run is over — on
// the first inference call past the iterations cap, on the call at which
// the calls' own tokens or cost pass the cap (the run's root when they
// never do: the totals counted more), on the root for active time — and
// for each typed partial result the run declared.
func budgetSignals(run Run, caps *Caps) []Signal {
	var out []Signal
	calls := slices.Clone(run.Calls)
	slices.SortFunc(calls, func(a, b Call) int {
		return cmp.Or(cmp.Compare(a.StartNs, b.StartNs), cmp.Compare(a.SpanID, b.SpanID))
	})
	crossing := func(passed func(tokens uint64, cost float64) bool) string {
		var tokens uint64
		var cost float64
		for _, c := range calls {
			tokens, cost = tokens+c.Tokens, cost+c.CostUSD
			if passed(tokens, cost) {
				return c.SpanID
			}
		}
		return run.RootSpanID
	}
	signal := func(span, reason string) {
		out = append(out, Signal{Kind: KindBudgetExceeded, SpanID: span, SpanIDs: []string{span}, Reason: reason})
	}
	for _, c := range caps.List() {
		if !c.applies(&run) {
			continue
		}
		if n := cmp.Or(run.Iterations, len(calls)); c.Iterations > 0 && n > c.Iterations {
			// The counted calls (wrapper spans of one call left out) decide;
			// the signal points at the inference span at the cap's place.
			at := run.RootSpanID
			if len(calls) > 0 {
				at = calls[min(c.Iterations, len(calls)-1)].SpanID
			}
			signal(at, fmt.Sprintf("the run made %d model calls, over %s cap of %d", n, c.name(), c.Iterations))
		}
		if c.Tokens > 0 && run.Tokens > c.Tokens {
			signal(crossing(func(t uint64, _ float64) bool { return t > c.Tokens }),
				fmt.Sprintf("the run used %d tokens, over %s cap of %d", run.Tokens, c.name(), c.Tokens))
		}
		if c.CostUSD > 0 && run.CostUSD > c.CostUSD {
			signal(crossing(func(_ uint64, usd float64) bool { return usd > c.CostUSD }),
				fmt.Sprintf("the run cost $%.4f, over %s cap of $%.4f", run.CostUSD, c.name(), c.CostUSD))
		}
		if active := ActiveTime(run.Approvals, run.StartNs, run.EndNs); c.Active > 0 && active > c.Active {
			signal(run.RootSpanID, fmt.Sprintf("the run was active for %s (waits for approval excluded), over %s cap of %s",
				active.Round(time.Millisecond), c.name(), c.Active))
		}
	}
	for _, inc := range run.Incomplete {
		signal(inc.SpanID, fmt.Sprintf("the run ended with a partial result: %s", inc.Reason))
	}
	return out
}
