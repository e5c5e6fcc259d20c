package alerts

import (
	"context"
	"fmt"
	"net/url"
	"time"
)

// KindRepeatLoop: one run calling a tool with the same arguments hash at
// least threshold times (successful calls).
const KindRepeatLoop Kind = "repeat_loop"

func repeatLoop() kindSpec {
	return kindSpec{
		kind:        KindRepeatLoop,
		description: "A run called the same tool with the same arguments again and again after it succeeded: the agent is looping without progress.",
		unit:        "calls with the same arguments in one run", subjects: []string{"tool"},
		threshold: 5, window: 15 * time.Minute, minSamples: 1, format: formatPlain, inclusive: true,
		measure: func(ctx context.Context, _ *Evaluator, c *cycle, r *Rule, project string, window time.Duration) ([]sample, error) {
			loops, err := c.src.RepeatLoops(ctx, c.window(project, window), int(r.Threshold), 1000)
			if err != nil {
				return nil, err
			}
			win, since := formatWindow(window), c.now.Add(-window).UTC().Format(time.RFC3339)
			byTool := map[string]*sample{}
			var order []string
			for _, l := range loops {
				s := byTool[l.Tool]
				if s == nil {
					s = &sample{subject: map[string]string{"tool": l.Tool}, cond: atLeast,
						runsQuery: url.Values{"tool": {l.Tool}, "since": {since}}}
					byTool[l.Tool] = s
					order = append(order, l.Tool)
				}
				s.value = max(s.value, float64(l.Calls))
				if !contains(s.examples, l.TraceID) {
					s.samples++
					s.examples = append(s.examples, l.TraceID)
				}
			}
			out := make([]sample, 0, len(order))
			for _, tool := range order {
				s := byTool[tool]
				s.detail = fmt.Sprintf("same arguments repeated in %d runs in %s", s.samples, win)
				s.examples = firstN(s.examples, 5)
				out = append(out, *s)
			}
			return out, nil
		},
		summary: func(_ *Rule, s sample, v, op, t string) string {
			return fmt.Sprintf("tool %s called %s times with the same arguments in one run %s %s (%s)",
				s.subject["tool"], v, op, t, s.detail)
		},
	}
}
