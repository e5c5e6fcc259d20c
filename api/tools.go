package api

import (
	"context"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/tallyhq/tally/query"
)

// ToolStatsReader is what GET /tools needs; query.ToolReader implements it.
type ToolStatsReader interface {
	Tools(ctx context.Context, f query.ToolFilter) ([]query.ToolStats, error)
	Models(ctx context.Context, w query.Window) ([]query.ModelStats, error)
}

// ToolsReport is the body of GET /api/v1/tools.
type ToolsReport struct {
	Since  time.Time          `json:"since"`
	Until  time.Time          `json:"until"`
	Tools  []query.ToolStats  `json:"tools"`
	Models []query.ModelStats `json:"models"`
	// Definitions explain the figures, for the UI.
	Definitions map[string]string `json:"definitions"`
}

// toolDefinitions say how the figures are computed.
func toolDefinitions() map[string]string {
	return map[string]string{
		"retry": "A tool call is a retry when (first match decides) its attempt attribute is 2 or more, " +
			"an earlier tool call of the run has the same tool call id, or the same step id, " +
			"or the previous call of the same tool under the same parent span failed. " +
			"Only what the instrumentation makes visible can be counted: SDKs that record all attempts in one span show no retries.",
		"repeat":     "A call with the same tool and arguments as an earlier successful call of the run: a loop signal, not a retry.",
		"retry_rate": "Retried calls / all calls in the window.",
		"percentiles": "Exact percentiles of the window's calls (ClickHouse quantilesExact): the value at sorted position ⌊q·n⌋, " +
			"at most one rank above the nearest-rank percentile.",
	}
}

// RegisterTools mounts GET /tools on r (a group at /api/v1): per-tool calls,
// errors, retries, retry rate, repeats and duration percentiles, and
// per-model inference latency, over ?since= (default 1h) and ?until=, for
// one ?tool= or all.
func (h *Handler) RegisterTools(r gin.IRoutes, tools ToolStatsReader, before ...gin.HandlerFunc) {
	r.GET("/tools", append(before, func(c *gin.Context) {
		if tools == nil {
			fail(c, http.StatusNotImplemented, "tool statistics are not configured")
			return
		}
		now := h.now()
		since, until, ok := queryRange(c, now)
		if !ok {
			return
		}
		if since.IsZero() {
			since = now.Add(-time.Hour).UTC()
		}
		if until.IsZero() {
			until = now.UTC()
		}
		w := query.Window{Project: Project(c), Since: since, Until: until}
		// The two are independent reads of the window: at once, so that
		// one's stages in Go (classifying retries, decoding) overlap the
		// other's in ClickHouse.
		ctx, cancel := context.WithCancel(c.Request.Context())
		defer cancel()
		var (
			models   []query.ModelStats
			modelErr error
			done     = make(chan struct{})
		)
		go func() {
			defer close(done)
			models, modelErr = tools.Models(ctx, w)
		}()
		stats, err := tools.Tools(ctx, query.ToolFilter{Window: w, Tool: c.Query("tool")})
		if err != nil {
			cancel() // the models' read is not wanted any more
		}
		<-done
		if err != nil {
			fail(c, http.StatusInternalServerError, "tool statistics: %v", err)
			return
		}
		if modelErr != nil {
			fail(c, http.StatusInternalServerError, "model latency: %v", modelErr)
			return
		}
		c.JSON(http.StatusOK, ToolsReport{Since: since, Until: until, Tools: stats, Models: models,
			Definitions: toolDefinitions()})
	})...)
}
