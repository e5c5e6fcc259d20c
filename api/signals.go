package api

import (
	"context"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/tallyhq/tally/query"
	"github.com/tallyhq/tally/safety"
	"github.com/tallyhq/tally/support/params"
)

// SignalReader counts runs' safety signals; query.ReviewReader implements
// it.
type SignalReader interface {
	Signals(ctx context.Context, f query.SignalFilter) (*query.SignalsReport, error)
}

// getSignals answers GET /signals?since=24h&kind=&tool=&agent=&task=&by=:
// the safety signals of the runs that started in the range, by kind and
// tool (by=task, by=agent), with counts and example runs, and the tools'
// steps by terminal status.
func (h *Handler) getSignals(c *gin.Context) {
	reader := h.opts.Signals
	if reader == nil {
		fail(c, http.StatusNotImplemented, "signals are not available in this build")
		return
	}
	since, until, err := params.TimeRange(c.DefaultQuery("since", "24h"), c.Query("until"), h.now())
	if err != nil {
		fail(c, http.StatusBadRequest, "%v", err)
		return
	}
	kind, err := safety.ParseSignalKind(c.Query("kind"))
	if err != nil {
		fail(c, http.StatusBadRequest, "%v", err)
		return
	}
	f := query.SignalFilter{Project: Project(c), Since: since, Until: until, Kind: kind, Tool: c.Query("tool"),
		Agent: c.Query("agent"), Task: c.Query("task"), By: c.DefaultQuery("by", "tool")}
	if f.By != "tool" && f.By != "task" && f.By != "agent" {
		fail(c, http.StatusBadRequest, "by %q: want tool, task or agent", f.By)
		return
	}
	rep, err := reader.Signals(c.Request.Context(), f)
	if err != nil {
		fail(c, http.StatusInternalServerError, "signals: %v", err)
		return
	}
	if rep.Until.IsZero() {
		rep.Until = h.now().UTC() // an open range ends now: say so
	}
	c.JSON(http.StatusOK, rep)
}

// CapsReader sets run caps from data; query.ReviewReader implements it.
type CapsReader interface {
	Caps(ctx context.Context, f query.CapsFilter) (*query.CapsReport, error)
}

// getCaps answers GET /caps?since=7d&task=&agent=&outcome=&multiplier=2.5:
// per task, the p50 and p99 of iterations, tool calls, tokens, cost and
// active time over the successful runs, the suggested caps (multiplier ×
// p99) and the runs over them; approval waits apart.
func (h *Handler) getCaps(c *gin.Context) {
	reader := h.opts.Caps
	if reader == nil {
		fail(c, http.StatusNotImplemented, "caps are not available in this build")
		return
	}
	since, until, err := params.TimeRange(c.DefaultQuery("since", "7d"), c.Query("until"), h.now())
	if err != nil {
		fail(c, http.StatusBadRequest, "%v", err)
		return
	}
	f := query.CapsFilter{Project: Project(c), Since: since, Until: until, Task: c.Query("task"), Agent: c.Query("agent"),
		Outcome: c.Query("outcome")}
	if v := c.Query("multiplier"); v != "" {
		m, err := strconv.ParseFloat(v, 64)
		if err != nil || !(m >= 1 && m <= 10) {
			fail(c, http.StatusBadRequest, "multiplier %q: want a number from 1 to 10", v)
			return
		}
		f.Multiplier = m
	}
	rep, err := reader.Caps(c.Request.Context(), f)
	if err != nil {
		fail(c, http.StatusInternalServerError, "caps: %v", err)
		return
	}
	if rep.Until.IsZero() {
		rep.Until = h.now().UTC()
	}
	c.JSON(http.StatusOK, rep)
}
