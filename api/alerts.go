package api

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/tallyhq/tally/alerts"
)

// AlertLister is what GET /alerts needs; *alerts.Evaluator implements it.
type AlertLister interface {
	Alerts(project string) []alerts.Status
}

// AlertsReport is the body of GET /api/v1/alerts.
type AlertsReport struct {
	Alerts []alerts.Status `json:"alerts"`
}

// RegisterAlerts mounts GET /alerts on r (a group at /api/v1): the caller's
// project's pending, firing and recently resolved alerts with their values
// and example run ids; ?state=pending|firing|resolved narrows the list. With
// a nil list (alerting off) it answers 501.
func (h *Handler) RegisterAlerts(r gin.IRoutes, list AlertLister) {
	r.GET("/alerts", func(c *gin.Context) {
		if list == nil {
			fail(c, http.StatusNotImplemented, "alerting is not configured (tally serve --alerts-rules)")
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
}
