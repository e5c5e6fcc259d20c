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
// implements it (it needs the price catalog: without one, Options.Costs is
// nil and the endpoints answer 501).
type Costs interface {
	Costs(ctx context.Context, f query.CostFilter) (query.CostReport, error)
	Cache(ctx context.Context, f query.CacheFilter) (query.CacheReport, error)
}

// registerCosts mounts GET /costs and GET /cache.
func (h *Handler) registerCosts(r gin.IRoutes) {
	costs := h.opts.Costs
	r.GET("/costs", func(c *gin.Context) { h.getCosts(c, costs) })
	r.GET("/cache", func(c *gin.Context) { h.getCache(c, costs) })
}

// getCosts serves GET /costs?by=agent|model|task|provider|tool|conversation|user|service
// &since=&until=&bucket=minute|hour|day&agent=&service=&user=&compare=previous&limit=
// (by defaults to agent; limit, the groups listed, to query.DefaultCostGroups).
func (h *Handler) getCosts(c *gin.Context, costs Costs) {
	if costs == nil {
		fail(c, http.StatusNotImplemented, "cost reports are not configured")
		return
	}
	f := query.CostFilter{Project: Project(c), By: c.DefaultQuery("by", query.ByAgent), Bucket: c.Query("bucket"),
		Agent: c.Query("agent"), Service: c.Query("service"), User: c.Query("user")}
	now := h.now()
	var ok bool
	if f.Since, f.Until, ok = queryRange(c, now); !ok {
		return
	}
	if v := c.Query("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			fail(c, http.StatusBadRequest, "limit %q: want 1 to %d groups", v, query.MaxCostGroups)
			return
		}
		f.Limit = n
	}
	if err := f.Validate(now); err != nil {
		fail(c, http.StatusBadRequest, "%v", err)
		return
	}
	if f.Until.IsZero() {
		f.Until = now.UTC()
	}
	compare := c.Query("compare")
	if compare != "" && compare != "previous" {
		fail(c, http.StatusBadRequest, "compare %q: want previous (the period of the same length just before)", compare)
		return
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
	out := CostComparison{CostReport: rep}
	if compare == "previous" {
		// The same length just before: [since − (until − since), since).
		prev := f
		prev.Bucket = query.BucketNone
		prev.Since, prev.Until = rep.Since.Add(-rep.Until.Sub(rep.Since)), rep.Since
		p, err := costs.Costs(c.Request.Context(), prev)
		if err != nil {
			fail(c, http.StatusInternalServerError, "cost report of the previous period: %v", err)
			return
		}
		out.Previous = &p
	}
	c.JSON(http.StatusOK, out)
}

// CostComparison is the body of GET /api/v1/costs: the report, and with
// compare=previous the same report (without series) over the period of the
// same length just before, for period-over-period change per group.
type CostComparison struct {
	query.CostReport
	Previous *query.CostReport `json:"previous,omitempty"`
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
