package api

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/tallyhq/tally/query"
)

// Costs is what the cost and cache endpoints need; *query.CostReader
// implements it (and, embedding *query.Reader, Runs too). The handler finds
// it by asserting the Runs value given to New, so passing a
// *query.CostReader to New turns the endpoints on; otherwise they answer 501.
type Costs interface {
	Costs(ctx context.Context, f query.CostFilter) (query.CostReport, error)
	Cache(ctx context.Context, f query.CacheFilter) (query.CacheReport, error)
}

// registerCosts mounts GET /costs and GET /cache.
func (h *Handler) registerCosts(r gin.IRoutes) {
	costs, _ := h.runs.(Costs)
	r.GET("/costs", func(c *gin.Context) { h.getCosts(c, costs) })
	r.GET("/cache", func(c *gin.Context) { h.getCache(c, costs) })
}

// getCosts serves GET /costs?by=agent|model|task|provider|tool|conversation|user|service
// &since=&until=&bucket=minute|hour|day (by defaults to agent).
func (h *Handler) getCosts(c *gin.Context, costs Costs) {
	if costs == nil {
		fail(c, http.StatusNotImplemented, "cost reports are not configured")
		return
	}
	f := query.CostFilter{Project: Project(c), By: c.DefaultQuery("by", query.ByAgent), Bucket: c.Query("bucket")}
	now := h.now()
	var ok bool
	if f.Since, f.Until, ok = queryRange(c, now); !ok {
		return
	}
	if err := f.Validate(now); err != nil {
		fail(c, http.StatusBadRequest, "%v", err)
		return
	}
	if f.Until.IsZero() {
		f.Until = now.UTC()
	}
	rep, err := costs.Costs(c.Request.Context(), f)
	if errors.Is(err, query.ErrInvalidFilter) {
		fail(c, http.StatusBadRequest, "%v", err)
		return
	}
	if err != nil {
		fail(c, http.StatusInternalServerError, "cost report: %v", err)
		return
	}
	c.JSON(http.StatusOK, rep)
}

// getCache serves GET /cache?since=&until=&agent=&model=&min_eligible_calls=
// &min_eligible_run_calls=&default_min_prefix_tokens=&run_limit=.
func (h *Handler) getCache(c *gin.Context, costs Costs) {
	if costs == nil {
		fail(c, http.StatusNotImplemented, "cache reports are not configured")
		return
	}
	f := query.CacheFilter{Project: Project(c), Agent: c.Query("agent"), Model: c.Query("model")}
	now := h.now()
	var ok bool
	if f.Since, f.Until, ok = queryRange(c, now); !ok {
		return
	}
	if f.Until.IsZero() {
		f.Until = now.UTC()
	}
	for _, p := range []struct {
		name string
		dst  *int
	}{
		{"min_eligible_calls", &f.Thresholds.MinEligibleCalls},
		{"min_eligible_run_calls", &f.Thresholds.MinEligibleRunCalls},
		{"default_min_prefix_tokens", &f.Thresholds.DefaultMinPrefixTokens},
		{"run_limit", &f.RunLimit},
	} {
		v := c.Query(p.name)
		if v == "" {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			fail(c, http.StatusBadRequest, "%s %q: want a positive integer", p.name, v)
			return
		}
		*p.dst = n
	}
	rep, err := costs.Cache(c.Request.Context(), f)
	if err != nil {
		fail(c, http.StatusInternalServerError, "cache report: %v", err)
		return
	}
	c.JSON(http.StatusOK, rep)
}
