package alerts

import (
	"context"
	"fmt"
	"net/url"
	"time"

	"github.com/tallyhq/tally/query"
)

// KindSpendBudget: spend per project, agent, user or task (`by:`) over
// the current calendar period (`period:` hour, day or month, UTC) is on
// course to pass the budget (the threshold, USD): the value is the linear
// forecast to the period's end (spend so far ÷ time elapsed × the period),
// once a tenth of the period has passed (before that, the spend so far),
// so the alert fires before the money is gone, and says when it will be.
const KindSpendBudget Kind = "spend_budget"

// spendPeriods and spendBy are what a spend_budget rule may take.
var (
	spendPeriods = []string{"month", "day", "hour"}
	spendBy      = []string{"project", "agent", "user", "task"}
)

// forecastAfter is the share of the period that must pass before spend is
// forecast: a minute into a month says nothing about the month.
const forecastAfter = 0.1

// periodOf is the calendar period (UTC) holding now.
func periodOf(period string, now time.Time) (start, end time.Time) {
	now = now.UTC()
	switch period {
	case "hour":
		start = now.Truncate(time.Hour)
		return start, start.Add(time.Hour)
	case "day":
		start = time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
		return start, start.AddDate(0, 0, 1)
	}
	start = time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	return start, start.AddDate(0, 1, 0)
}

// Forecast is spend's linear course over a period: the spend by now, the
// forecast for the whole period (equal to the spend before forecastAfter
// of it has passed) and, when the forecast passes the budget, when the
// spend will (zero when it already has or will not).
func Forecast(spent, budget float64, start, end, now time.Time) (forecast float64, passesAt time.Time) {
	elapsed := now.Sub(start)
	if elapsed <= 0 || float64(elapsed) < forecastAfter*float64(end.Sub(start)) {
		return spent, time.Time{}
	}
	rate := spent / float64(elapsed) // USD per nanosecond
	forecast = rate * float64(end.Sub(start))
	if spent < budget && forecast > budget && rate > 0 {
		passesAt = start.Add(time.Duration(budget / rate))
	}
	return forecast, passesAt
}

func spendBudget() kindSpec {
	return kindSpec{
		kind:        KindSpendBudget,
		description: "Spend is on course to pass its budget before the period ends.",
		unit:        "USD per period", subjects: []string{"agent", "user", "task"},
		window: 0, minSamples: 1, format: formatUSD,
		measure: func(ctx context.Context, _ *Evaluator, c *cycle, r *Rule, project string, _ time.Duration) ([]sample, error) {
			start, end := periodOf(r.Period, c.now)
			by := r.By
			if by == "project" {
				by = "agent" // any dimension; the total is read
			}
			// Every subject: a budget may be set for one that spends little.
			rep, err := c.src.Costs(ctx, query.CostFilter{Project: project, By: by, Since: start, Until: c.now, Limit: query.MaxCostGroups})
			if err != nil {
				return nil, err
			}
			type group struct {
				subject map[string]string
				spent   float64
				calls   int
			}
			var groups []group
			if r.By == "project" {
				groups = append(groups, group{map[string]string{}, rep.Total.Cost.Total, int(rep.Total.LLMCalls)})
			} else {
				for _, g := range rep.Groups {
					groups = append(groups, group{map[string]string{r.By: g.Key}, g.Cost.Total, int(g.LLMCalls)})
				}
			}
			var out []sample
			for _, g := range groups {
				threshold, _, _ := r.settingsFor(g.subject)
				forecast, passes := Forecast(g.spent, threshold, start, end, c.now)
				detail := fmt.Sprintf("spent %s of %s this %s so far", formatUSD(g.spent), formatUSD(threshold), r.Period)
				switch {
				case g.spent > threshold:
					detail += ": the budget is spent"
				case !passes.IsZero():
					detail += fmt.Sprintf("; at this rate it passes %s by %s", formatUSD(threshold), passes.UTC().Format(passFormat(r.Period)))
				}
				q := url.Values{"since": {start.Format(time.RFC3339)}}
				if r.By != "project" {
					q.Set(r.By, g.subject[r.By])
				}
				out = append(out, sample{subject: g.subject, value: max(forecast, g.spent), samples: g.calls, cond: above,
					detail: detail, runsQuery: q})
			}
			return out, nil
		},
		summary: func(r *Rule, s sample, v, op, t string) string {
			who := "the project"
			if r.By != "project" {
				who = r.By + " " + s.subject[r.By]
			}
			return fmt.Sprintf("%s's %s spend is forecast at %s %s budget %s (%s)", who, r.Period, v, op, t, s.detail)
		},
	}
}

// passFormat is how the pass time is written for a period: the day in a
// month, the time in a day or an hour.
func passFormat(period string) string {
	if period == "month" {
		return "Jan 2"
	}
	return "15:04 UTC"
}
