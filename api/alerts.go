package api

import (
	"context"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/tallyhq/tally/alerts"
	"github.com/tallyhq/tally/support/params"
)

// AlertLister is what the alert routes need; *alerts.Evaluator implements
// it: the server's alert instances, its loaded rules, and a one-off check.
type AlertLister interface {
	Alerts(project string) []alerts.Status
	History(project, rule string, since, until time.Time) []alerts.Episode
	Rules() []alerts.Rule
	Check(ctx context.Context, window time.Duration, projects []string) ([]alerts.CheckResult, error)
}

// AlertHistoryReport is the body of GET /api/v1/alerts/history: the
// episodes (firing to resolved) that overlap since..until, newest first.
type AlertHistoryReport struct {
	Since    time.Time        `json:"since"`
	Until    time.Time        `json:"until"`
	Episodes []alerts.Episode `json:"episodes"`
}

// AlertsReport is the body of GET /api/v1/alerts.
type AlertsReport struct {
	Alerts []alerts.Status `json:"alerts"`
}

// AlertRulesReport is the body of GET /api/v1/alerts/rules: the rules the
// server evaluates, in file order, with how many of the caller's alert
// instances are pending and firing under each.
type AlertRulesReport struct {
	Rules []AlertRule `json:"rules"`
}

// AlertRule is one loaded rule and the state of its instances.
type AlertRule struct {
	alerts.Rule
	Pending int `json:"pending"`
	Firing  int `json:"firing"`
}

// AlertCheckReport is the body of GET /api/v1/alerts/check: every
// subject each rule measures now in the caller's project, firing first.
type AlertCheckReport struct {
	// Window replaces every rule's own window when the request gave since;
	// empty otherwise.
	Window  string               `json:"window,omitempty"`
	Rules   int                  `json:"rules"`
	Firing  int                  `json:"firing"`
	Results []alerts.CheckResult `json:"results"`
}

// RegisterAlerts mounts the alert routes on r (a group at /api/v1). With a
// nil list (alerting off) each answers 501.
//
//   - GET /alerts: the caller's project's pending, firing and recently
//     resolved alerts with their values and example run ids;
//     ?state=pending|firing|resolved narrows the list.
//   - GET /alerts/rules: the loaded rules with thresholds, windows,
//     severity, description and runbook, and their instances' states.
//   - GET /alerts/check: evaluate every rule once now over the caller's
//     project, ignoring `for` and sending nothing (what `tally alerts
//     check` prints); ?since=1h replaces every rule's window.
func (h *Handler) RegisterAlerts(r gin.IRoutes, list AlertLister) {
	off := func(c *gin.Context) bool {
		if list == nil {
			fail(c, http.StatusNotImplemented, "alerting is not configured (tally serve --alerts-rules)")
			return true
		}
		return false
	}
	r.GET("/alerts", func(c *gin.Context) {
		if off(c) {
			return
		}
		state := alerts.State(c.Query("state"))
		switch state {
		case "", alerts.StatePending, alerts.StateFiring, alerts.StateResolved:
		default:
			fail(c, http.StatusBadRequest, "state %q: want pending, firing or resolved", state)
			return
		}
		out := []alerts.Status{}
		for _, a := range list.Alerts(Project(c)) {
			if state == "" || a.State == state {
				out = append(out, a)
			}
		}
		c.JSON(http.StatusOK, AlertsReport{Alerts: out})
	})
	r.GET("/alerts/history", func(c *gin.Context) {
		if off(c) {
			return
		}
		since, until := c.DefaultQuery("since", "7d"), c.Query("until")
		from, to, err := params.TimeRange(since, until, h.now())
		if err != nil {
			fail(c, http.StatusBadRequest, "%v", err)
			return
		}
		if to.IsZero() {
			to = h.now()
		}
		eps := list.History(Project(c), c.Query("rule"), from, to)
		if eps == nil {
			eps = []alerts.Episode{}
		}
		c.JSON(http.StatusOK, AlertHistoryReport{Since: from, Until: to, Episodes: eps})
	})
	r.GET("/alerts/rules", func(c *gin.Context) {
		if off(c) {
			return
		}
		pending, firing := map[string]int{}, map[string]int{}
		for _, a := range list.Alerts(Project(c)) {
			switch a.State {
			case alerts.StatePending:
				pending[a.Rule]++
			case alerts.StateFiring:
				firing[a.Rule]++
			}
		}
		out := AlertRulesReport{Rules: []AlertRule{}}
		for _, rule := range list.Rules() {
			out.Rules = append(out.Rules, AlertRule{Rule: rule, Pending: pending[rule.Name], Firing: firing[rule.Name]})
		}
		c.JSON(http.StatusOK, out)
	})
	r.GET("/alerts/check", func(c *gin.Context) {
		if off(c) {
			return
		}
		var window time.Duration
		if arg := c.Query("since"); arg != "" {
			now := h.now()
			t, err := params.ParseTime(arg, now)
			if err != nil || !t.Before(now) {
				fail(c, http.StatusBadRequest, "since %q: want a duration like 1h or 7d, or a past RFC 3339 time", arg)
				return
			}
			window = now.Sub(t)
		}
		results, err := list.Check(c.Request.Context(), window, []string{Project(c)})
		if err != nil {
			fail(c, http.StatusInternalServerError, "%v", err)
			return
		}
		out := AlertCheckReport{Rules: len(list.Rules()), Results: results}
		if window > 0 {
			out.Window = window.String()
		}
		for _, r := range results {
			if r.Firing {
				out.Firing++
			}
		}
		c.JSON(http.StatusOK, out)
	})
}
