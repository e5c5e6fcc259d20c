package api

import (
	"context"
	"net/http"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/tallyhq/tally/query"
	"github.com/tallyhq/tally/safety"
	"github.com/tallyhq/tally/support/params"
)

// SignalReader counts runs' safety signals; *query.Reader implements it
// (found by asserting the Runs value given to New).
type SignalReader interface {
	Signals(ctx context.Context, f query.SignalFilter) (*query.SignalsReport, error)
}

// getSignals answers GET /signals?since=24h&kind=&tool=&agent=&task=&by=:
// the safety signals of the runs that started in the range, by kind and
// tool (by=task, by=agent), with counts and example runs, and the tools'
// steps by terminal status.
func (h *Handler) getSignals(c *gin.Context) {
	reader, ok := h.runs.(SignalReader)
	if !ok {
		fail(c, http.StatusNotImplemented, "signals are not available in this build")
		return
	}
	since, until, err := params.TimeRange(c.DefaultQuery("since", "24h"), c.Query("until"), h.now())
	if err != nil {
		fail(c, http.StatusBadRequest, "%v", err)
		return
	}
	f := query.SignalFilter{Project: Project(c), Since: since, Until: until, Kind: c.Query("kind"), Tool: c.Query("tool"),
		Agent: c.Query("agent"), Task: c.Query("task"), By: c.DefaultQuery("by", "tool")}
	if f.By != "tool" && f.By != "task" && f.By != "agent" {
		fail(c, http.StatusBadRequest, "by %q: want tool, task or agent", f.By)
		return
	}
	if f.Kind != "" && !slices.Contains(safety.Kinds(), f.Kind) {
		fail(c, http.StatusBadRequest, "kind %q: want one of %s", f.Kind, strings.Join(safety.Kinds(), ", "))
		return
	}
	rep, err := reader.Signals(c.Request.Context(), f)
	if err != nil {
		fail(c, http.StatusInternalServerError, "signals: %v", err)
		return
	}
	c.JSON(http.StatusOK, rep)
}
