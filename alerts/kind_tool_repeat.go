package alerts

import (
	"fmt"
	"time"

	"github.com/tallyhq/tally/query"
)

// KindToolRepeatRate: the share of a tool's calls that repeat an earlier
// successful call with the same arguments in the same run (a ratio): the
// agent asking again for what it already has, a loop signal across runs
// where repeat_loop looks at one run.
const KindToolRepeatRate Kind = "tool_repeat_rate"

func toolRepeatRate() kindSpec {
	return kindSpec{
		kind:        KindToolRepeatRate,
		description: "The tool is called again with the same arguments after a successful call in the same run more often than the threshold: agents are looping or not using what the tool returned.",
		unit:        "a ratio, 0.10 = 10%", subjects: []string{"tool"},
		threshold: 0.20, window: 15 * time.Minute, minSamples: 20, ratio: true, format: formatPercent,
		measure: toolKind(func(s query.ToolStats, win string) (float64, []string, string) {
			rate := 0.0
			if s.Calls > 0 {
				rate = float64(s.Repeats) / float64(s.Calls)
			}
			return rate, nil, fmt.Sprintf("%d of %d calls repeated in %s", s.Repeats, s.Calls, win)
		}),
		summary: func(_ *Rule, s sample, v, op, t string) string {
			return fmt.Sprintf("tool %s repeat rate %s %s %s (%s)", s.subject["tool"], v, op, t, s.detail)
		},
	}
}
