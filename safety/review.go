package safety

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"slices"
)

// Run is what the review of one run reads: its tool steps, its inference
// calls (with the tools each was offered), its approvals and its totals.
type Run struct {
	Project string
	Task    string
	Agents  []string
	// RootSpanID is the span a run-wide signal points at when no step does.
	RootSpanID string
	Steps      []Step
	Calls      []Call
	Approvals  []Approval
	// Incomplete are the typed partial results the run's spans declared.
	Incomplete []Incomplete
	// Guardrails are the guardrail checks the run's spans recorded.
	Guardrails []Guardrail
	// Iterations are the run's counted model calls (wrapper spans of one
	// call counted once); 0: len(Calls).
	Iterations int
	// Totals: counted tokens and cost (USD), and the wall clock from the
	// first span's start to the last span's end.
	Tokens  uint64
	CostUSD float64
	StartNs uint64
	EndNs   uint64
}

// Call is one inference call: when it ran, under which span, what it
// counted toward the run's totals, and the tools it was offered (nil when
// its span recorded no tool definitions: nothing to check against).
type Call struct {
	SpanID, ParentSpanID string
	StartNs, EndNs       uint64
	Tokens               uint64
	CostUSD              float64
	Offered              Tools
}

// Config is what the review is configured with. The zero Config reviews
// with the default limits, no effect patterns, no registry and no caps.
type Config struct {
	Effects  *Policy
	Registry *Registry
	Limits   Limits
	Caps     *Caps
	// Validator checks tool arguments within its limits and keeps what it
	// compiled and found; nil: one with the default limits for this
	// review alone.
	Validator *Validator
}

// Review reviews one run and returns its signals, in the order of the
// spans they point at (run-wide signals at their span's place). Each kind's
// rule is documented on its constant and in docs/api.md (the safety review).
func Review(run Run, cfg Config) []Signal {
	l := cfg.Limits.withDefaults()
	steps := slices.Clone(run.Steps)
	slices.SortFunc(steps, func(a, b Step) int {
		return cmp.Or(cmp.Compare(a.StartNs, b.StartNs), cmp.Compare(a.SpanID, b.SpanID))
	})
	out := stepSignals(steps, l)
	val := cfg.Validator
	if val == nil {
		val = NewValidator(ValidationLimits{})
	}
	out = append(out, offeredSignals(run, steps, cfg.Registry, val)...)
	out = append(out, gateSignals(steps, run.Approvals)...)
	out = append(out, budgetSignals(run, cfg.Caps)...)
	order := map[string]uint64{}
	for _, s := range steps {
		order[s.SpanID] = s.StartNs
	}
	for _, c := range run.Calls {
		order[c.SpanID] = c.StartNs
	}
	for _, inc := range run.Incomplete {
		order[inc.SpanID] = inc.StartNs
	}
	order[run.RootSpanID] = run.StartNs
	slices.SortStableFunc(out, func(a, b Signal) int {
		return cmp.Or(cmp.Compare(order[a.SpanID], order[b.SpanID]), cmp.Compare(a.SpanID, b.SpanID))
	})
	return out
}

// Digest identifies what the review decides under c: two configurations
// with the same digest raise the same signals on the same run. The run
// table (package settle) records it beside each run's review, so that a
// change of configuration (effect classes, registry, limits, caps,
// validation limits) re-reviews the runs the table holds. The default
// limits and an unset Validator digest as what they stand for.
func (c Config) Digest() uint64 {
	h := fnv.New64a()
	var effects, registry []rule
	if c.Effects != nil {
		effects = c.Effects.rules
	}
	if c.Registry != nil {
		registry = c.Registry.rules
	}
	validation := ValidationLimits{}
	if c.Validator != nil {
		validation = c.Validator.limits
	}
	fmt.Fprintf(h, "effects %v\nregistry %v\nlimits %+v\ncaps %+v\nvalidation %+v\n",
		effects, registry, c.Limits.withDefaults(), c.Caps.List(), validation.withDefaults())
	return h.Sum64()
}
