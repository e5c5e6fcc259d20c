package alerts

import (
	"context"
	"math"
	"strconv"
	"strings"
	"time"
)

// kindSpec is everything about one alert kind: the defaults a rule of the
// kind gets, how its threshold is checked and its values read, how it is
// measured and how its alerts are worded. Each family's kinds live in a
// file of their own (kind_tool.go, kind_tool_repeat.go, kind_model.go,
// kind_cache.go, kind_budget.go, kind_spend.go, kind_loop.go,
// kind_signal.go, kind_version.go); kinds() lists them. It is the one table the
// rule parser and the evaluator read, so a new kind is one new file and one
// row there.
type kindSpec struct {
	kind Kind
	// description is the default description annotation.
	description string
	// unit names the threshold's unit, for errors and docs.
	unit string
	// subjects are the labels naming what is measured, the ones a rule's
	// overrides may match (the first is the main one).
	subjects []string
	// threshold, window and minSamples are the defaults of a rule that
	// leaves them out; a zero threshold must be set by the rule.
	threshold  float64
	window     time.Duration
	minSamples int
	// noThreshold: the kind fires on a verdict, not a value (cache_read_zero).
	noThreshold bool
	// zeroThreshold: a threshold of 0 is a threshold (query: any value
	// above 0), not a missing one.
	zeroThreshold bool
	// ratio: the threshold is a ratio below 1 (0.10 = 10%).
	ratio bool
	// measures are the values `measure:` may take, the first the default;
	// nil for a kind without a choice.
	measures []string
	// format renders a value (and the threshold) in the kind's unit.
	format func(v float64) string
	// measure evaluates one rule in one project over window.
	measure func(ctx context.Context, e *Evaluator, c *cycle, r *Rule, project string, window time.Duration) ([]sample, error)
	// summary is the one-line annotation; v and t are the formatted value
	// and threshold, op how they compare (">" when the condition holds,
	// "≤" when it does not; "≥" and "<" for an inclusive kind).
	summary func(r *Rule, s sample, v, op, t string) string
	// inclusive: the threshold itself fires (at least, not above).
	inclusive bool
}

// kinds is the table of alert kinds, in the order the docs list them.
func kinds() []kindSpec {
	out := []kindSpec{
		toolRetryRate(),
		toolErrorRate(),
		toolRepeatRate(),
		toolLatencyP95(),
		modelLatencyP95(),
		cacheReadZero(),
		runCost(),
		repeatLoop(),
		versionRegression(),
		periodRegression(),
		spendBudget(),
		queryKind(),
	}
	return append(out, signalKinds()...)
}

// specOf returns the kind's spec.
func specOf(k Kind) (kindSpec, bool) {
	for _, s := range kinds() {
		if s.kind == k {
			return s, true
		}
	}
	return kindSpec{}, false
}

func kindNames() []string {
	var out []string
	for _, s := range kinds() {
		out = append(out, string(s.kind))
	}
	return out
}

// Value formats shared by kinds.
func formatPercent(v float64) string { return strconv.FormatFloat(v*100, 'f', 1, 64) + "%" }
func formatMs(v float64) string      { return strconv.FormatFloat(v, 'f', 0, 64) + " ms" }

// formatUSD writes cents for a dollar or more ($1.25) and three significant
// digits below ($0.00927, $0.005), so a small budget and the run that broke
// it never both read "$0.01".
func formatUSD(v float64) string {
	if v == 0 || math.Abs(v) >= 1 {
		return "$" + strconv.FormatFloat(v, 'f', 2, 64)
	}
	decimals := min(max(2-int(math.Floor(math.Log10(math.Abs(v)))), 2), 10)
	s := strconv.FormatFloat(v, 'f', decimals, 64)
	for strings.HasSuffix(s, "0") && len(s)-strings.IndexByte(s, '.') > 3 {
		s = s[:len(s)-1]
	}
	return "$" + s
}

func formatPlain(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
