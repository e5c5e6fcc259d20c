package bench

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tallyhq/tally/consistency"
)

// Spread puts several runs of the suite on one build in one: each figure's
// value is the median of its runs' values, judged against its goal, and
// its detail lists the runs' values with the least and the greatest. A
// figure that moves between runs of one build on a shared machine (the
// ingest efficiency moved 0.50–0.82 here) is read by its median and its
// spread, not by one run. Figures are in the first run's order; one that
// no run could measure stays unavailable with the first run's reason.
func Spread(runs []*Results) *Results {
	if len(runs) == 0 {
		return &Results{}
	}
	out := &Results{Machine: runs[0].Machine, Started: runs[0].Started, Config: runs[0].Config,
		Notes: slices.Clone(runs[0].Notes)}
	var took time.Duration
	for _, r := range runs {
		if d, err := time.ParseDuration(r.Duration); err == nil {
			took += d
		}
	}
	out.Duration = took.String()
	for _, first := range runs[0].Figures {
		var values []float64
		for _, r := range runs {
			if f := r.Figure(first.ID); f != nil && f.Available {
				values = append(values, f.Value)
			}
		}
		f := Figure{ID: first.ID, Name: first.Name, Unit: first.Unit, Goal: first.Goal, Inputs: first.Inputs}
		if len(values) == 0 {
			f.Reason = first.Reason
		} else {
			sorted := slices.Sorted(slices.Values(values))
			f.Value, f.Available = consistency.Quantile(sorted, 0.5), true // the mean of the middle two for an even count
			f.Met = judge(f.Goal, f.Value)
			shown := make([]string, len(values))
			for i, v := range values {
				shown[i] = FormatValue(v)
			}
			f.Detail = map[string]any{"runs": len(values), "values": strings.Join(shown, " / "),
				"min": sorted[0], "max": sorted[len(sorted)-1]}
		}
		out.Figures = append(out.Figures, f)
	}
	out.Notes = append(out.Notes, fmt.Sprintf("Spread of %d runs of the same build: each value is the median of the runs' values; "+
		"the detail lists them (values, in run order) with the least and the greatest. Each run's own results are in run-1 … run-%d.",
		len(runs), len(runs)))
	return out
}

// judge reads a goal of the form "≥ X" or "≤ X" (X may group thousands
// with commas) and says whether v meets it; nil for any other goal.
func judge(goal string, v float64) *bool {
	op, num, ok := strings.Cut(strings.TrimSpace(goal), " ")
	if !ok {
		return nil
	}
	x, err := strconv.ParseFloat(strings.ReplaceAll(strings.TrimSpace(num), ",", ""), 64)
	if err != nil {
		return nil
	}
	switch op {
	case "≥":
		return atLeast(v, x)
	case "≤":
		return atMost(v, x)
	}
	return nil
}
